//! A stub tenant backend speaking root-int/1, for trying integrations by hand:
//!
//! ```sh
//! cargo run --example stub-integration            # free port
//! cargo run --example stub-integration -- 7400    # fixed port
//! ```
//!
//! It prints its base URL and signing secret, then serves until Ctrl-C.
//! Register it with `POST /api/v1/integrations` using both.

use std::net::SocketAddr;

use root::integrations::signing::generate_secret;
use testkit::stub::StubBackend;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "port must be a number")
        })?,
        None => 0,
    };
    let secret = generate_secret();
    let stub = StubBackend::start_on(SocketAddr::from(([127, 0, 0, 1], port)), secret).await?;
    println!("stub root-int/1 backend");
    println!("base_url:       {}", stub.base_url());
    println!("signing_secret: {}", stub.secret());
    println!();
    println!("register it:");
    println!(
        "  curl -X POST -H 'Authorization: Bearer rpk_…' -H 'content-type: application/json' \\\n    localhost:4000/api/v1/integrations \\\n    -d '{{\"name\":\"stub\",\"base_url\":\"{}\",\"signing_secret\":\"{}\"}}'",
        stub.base_url(),
        stub.secret()
    );
    println!("Ctrl-C to stop.");
    tokio::signal::ctrl_c().await?;
    let seen = stub.requests().len();
    println!("stopped after {seen} requests");
    Ok(())
}
