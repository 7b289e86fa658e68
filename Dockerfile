# Root in a container: build with the Rust toolchain, run on debian-slim as
# a non-root user with the data directory on a volume.
#   docker build -t root .
#   docker run -p 4000:4000 -v root-data:/var/lib/root --env-file root.env root
# NODE_ENV=production: root.env must set PLATFORM_BASE_URL=https://… (start-up
# refuses an http:// base URL in production, so cookies are always Secure).
FROM rust:1.90-bookworm AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin root \
    && install -m 0755 target/release/root /usr/local/bin/root

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/root --shell /usr/sbin/nologin root-svc \
    && install -d -m 0700 -o root-svc -g root-svc /var/lib/root
COPY --from=builder /usr/local/bin/root /usr/local/bin/root
USER root-svc
ENV ROOT_DATA_DIR=/var/lib/root \
    NODE_ENV=production \
    PORT=4000 \
    ROOT_BIND=0.0.0.0
VOLUME /var/lib/root
EXPOSE 4000
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/root"]
CMD ["serve"]
