//! OS-level confinement of the sandbox child (review L-4), applied by the
//! child to itself before it reads its request, so before any module code
//! or model-chosen `params` reach QuickJS. QuickJS is the first wall; this
//! is the second, for a memory-safety bug in it:
//!
//! - rlimits: address space ([`ADDRESS_SPACE_LIMIT_BYTES`]), open files
//!   ([`OPEN_FILES_LIMIT`]), no core files, no file growth;
//! - `PR_SET_NO_NEW_PRIVS`;
//! - a child started as root switches to `nobody` ([`UNPRIVILEGED_ID`]),
//!   dropping every capability;
//! - Landlock: every filesystem right is handled and only reads of what
//!   name resolution, TLS roots and time zones need (and `/proc/self`)
//!   are granted, so the data directory, the admin socket's directory and
//!   `/proc/<parent>/environ` are refused; its ptrace scoping keeps the
//!   child away from the server's memory and environment too;
//! - seccomp: no `execve`, `fork`, `ptrace`, `process_vm_*`, namespaces,
//!   mounts, io_uring, BPF or kernel keyrings, and no sockets but
//!   IPv4/IPv6 (the child's `fetch` connects itself) and netlink (glibc's
//!   resolver asks it for local addresses); threads stay allowed (the
//!   resolver runs on one).
//!
//! Each step is best effort: where the kernel lacks one (an old kernel, a
//! container that filters `landlock_*` or `seccomp`), the child goes on
//! with the rest and says so in its [`Confinement`] report, which the
//! parent logs. The report's `no_new_privs` and `seccomp` are what
//! `/proc/self/status` says after the fact, not what was attempted.

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The child's address-space limit (`RLIMIT_AS`): the 256 MiB JavaScript
/// heap ([`super::MEMORY_LIMIT_BYTES`]) plus the binary's own mappings,
/// thread stacks and the allocator's per-thread arenas (each reserves
/// 64 MiB of address space). Measured (debug build): a child that hit the
/// heap limit peaked at 370 MiB, one that resolved a name (a resolver
/// thread and its arena) and then hit the heap limit at 435 MiB.
pub const ADDRESS_SPACE_LIMIT_BYTES: u64 = 512 * 1024 * 1024;
/// The child's open-file limit (`RLIMIT_NOFILE`): its pipes, the runtime's
/// epoll and wakers, and `fetch`'s pooled connections (at most
/// [`super::MAX_FETCHES`] per run).
pub const OPEN_FILES_LIMIT: u64 = 256;
/// The uid and gid a child started as root switches to (`nobody`).
pub const UNPRIVILEGED_ID: u32 = 65534;

/// Files and directories the child may read under Landlock: what glibc's
/// resolver and loader read for `fetch` (its NSS modules are loaded on
/// demand), public TLS roots, and time zones (QuickJS's `Date`). Paths
/// that do not exist are skipped. Nothing is writable.
const READABLE: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/ssl/certs",
    "/etc/pki/tls/certs",
    "/usr/share/ca-certificates",
    "/usr/share/zoneinfo",
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/proc/self",
];

/// How far Landlock confines the child.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandlockLevel {
    /// Every right this binary knows is enforced.
    Full,
    /// The kernel's older ABI enforces a subset (file reads and writes are
    /// always in it).
    Partial,
    /// Not enforced (no Landlock in the kernel, or it failed).
    #[default]
    None,
}

/// What the child applied to itself, as it reports it to the parent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// `NoNewPrivs` from `/proc/self/status` afterwards (1: set).
    pub no_new_privs: u8,
    /// `Seccomp` from `/proc/self/status` afterwards (2: filtered).
    pub seccomp: u8,
    /// Landlock's enforcement.
    pub landlock: LandlockLevel,
    /// Every rlimit was set.
    pub rlimits: bool,
    /// The child started as root and switched to `nobody`.
    pub dropped_root: bool,
    /// Each step that was not applied, with the reason (empty: all were).
    pub missing: Vec<String>,
}

impl Confinement {
    /// Every layer is in place.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Confine the calling process (see the module doc). Never fails: what
/// could not be applied is listed in the report.
pub fn apply() -> Confinement {
    let mut c = Confinement::default();
    imp::apply(&mut c);
    let (no_new_privs, seccomp) = imp::kernel_view();
    c.no_new_privs = no_new_privs;
    c.seccomp = seccomp;
    if c.no_new_privs != 1 && !c.missing.iter().any(|m| m.starts_with("no_new_privs")) {
        c.missing
            .push("no_new_privs: the kernel does not report it set".into());
    }
    c
}

/// `root sandbox-probe`: confine this process exactly as a sandbox child
/// is, then try what a compromised child would: open each of `paths`,
/// read the parent's environment, create a Unix socket, fork. One JSON
/// object: the [`Confinement`] report and each attempt's outcome. For
/// checking what a host's kernel confines (and for the tests).
pub fn probe(paths: &[PathBuf]) -> Value {
    let confinement = apply();
    let opened: Vec<Value> = paths
        .iter()
        .map(|p| {
            let mut v = attempt(std::fs::File::open(p).map(drop));
            v["path"] = json!(p.display().to_string());
            v
        })
        .collect();
    let parent = std::os::unix::process::parent_id();
    json!({
        "confinement": confinement,
        "open": opened,
        "parent_environ": attempt(std::fs::read(format!("/proc/{parent}/environ")).map(drop)),
        "unix_socket": attempt(imp::unix_socket()),
        "fork": attempt(imp::fork()),
    })
}

/// An attempt as JSON: `{"allowed": true}` or `{"allowed": false, "errno": …}`.
fn attempt(r: io::Result<()>) -> Value {
    match r {
        Ok(()) => json!({"allowed": true}),
        Err(e) => json!({"allowed": false, "errno": e.raw_os_error(), "error": e.to_string()}),
    }
}

/// `/proc/self/status`'s `NoNewPrivs` and `Seccomp` (0 when unreadable).
fn status_fields(status: &str) -> (u8, u8) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("NoNewPrivs"), field("Seccomp"))
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeMap;
    use std::io;
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, RestrictSelfAttr,
        Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{
        ADDRESS_SPACE_LIMIT_BYTES, Confinement, LandlockLevel, OPEN_FILES_LIMIT, READABLE,
        UNPRIVILEGED_ID, status_fields,
    };

    /// The newest Landlock ABI this code was written and tested against.
    const LANDLOCK_ABI: ABI = ABI::V10;

    pub(super) fn apply(c: &mut Confinement) {
        c.rlimits = rlimits(c);
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            c.missing
                .push(format!("no_new_privs: {}", io::Error::last_os_error()));
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            match drop_root() {
                Ok(()) => c.dropped_root = true,
                Err(e) => c.missing.push(format!("dropping root: {e}")),
            }
        }
        c.landlock = match landlock() {
            Ok(level) => level,
            Err(e) => {
                c.missing.push(format!("landlock: {e}"));
                LandlockLevel::None
            }
        };
        if let Err(e) = seccomp() {
            c.missing.push(format!("seccomp: {e}"));
        }
    }

    pub(super) fn kernel_view() -> (u8, u8) {
        match std::fs::read_to_string("/proc/self/status") {
            Ok(s) => status_fields(&s),
            Err(_) => {
                // No procfs: ask the kernel directly.
                // SAFETY: prctl getters with no pointer arguments.
                let nnp = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
                // SAFETY: as above.
                let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
                (
                    u8::try_from(nnp).unwrap_or(0),
                    u8::try_from(mode).unwrap_or(0),
                )
            }
        }
    }

    /// Lower (never raise) each limit; `false` if any failed.
    fn rlimits(c: &mut Confinement) -> bool {
        let limits = [
            (libc::RLIMIT_AS, ADDRESS_SPACE_LIMIT_BYTES, "RLIMIT_AS"),
            (libc::RLIMIT_NOFILE, OPEN_FILES_LIMIT, "RLIMIT_NOFILE"),
            (libc::RLIMIT_CORE, 0, "RLIMIT_CORE"),
            (libc::RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"),
        ];
        let mut all = true;
        for (resource, want, name) in limits {
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `current` is a valid rlimit to write into.
            let got = unsafe { libc::getrlimit(resource, &mut current) } == 0;
            let value = if got {
                want.min(current.rlim_max)
            } else {
                want
            };
            let new = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: `new` is a valid rlimit to read from.
            if unsafe { libc::setrlimit(resource, &new) } != 0 {
                c.missing
                    .push(format!("{name}: {}", io::Error::last_os_error()));
                all = false;
            }
        }
        all
    }

    /// Root in the child would keep every capability (reading any file,
    /// ptracing anything, raw sockets): switch to `nobody`, which drops
    /// them all. Groups first, then the gid, then the uid.
    fn drop_root() -> io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        };
        let id = UNPRIVILEGED_ID;
        // SAFETY: an empty group list; integer ids.
        check(unsafe { libc::setgroups(0, std::ptr::null()) })?;
        // SAFETY: integer ids.
        check(unsafe { libc::setresgid(id, id, id) })?;
        // SAFETY: integer ids.
        check(unsafe { libc::setresuid(id, id, id) })?;
        // SAFETY: getter without arguments.
        if unsafe { libc::geteuid() } != id {
            return Err(io::Error::other("the uid did not change"));
        }
        Ok(())
    }

    fn landlock() -> Result<LandlockLevel, String> {
        let all = AccessFs::from_all(LANDLOCK_ABI);
        let read_dir = AccessFs::ReadFile | AccessFs::ReadDir;
        let mut created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .and_then(|r| r.scope(Scope::from_all(LANDLOCK_ABI)))
            .and_then(|r| r.create())
            .map_err(|e| e.to_string())?;
        for path in READABLE.iter().map(Path::new) {
            // A path this host lacks is simply not granted.
            let (Ok(meta), Ok(fd)) = (std::fs::metadata(path), PathFd::new(path)) else {
                continue;
            };
            let is_dir = meta.is_dir();
            let access = if is_dir {
                read_dir
            } else {
                read_dir & AccessFs::from_file(LANDLOCK_ABI)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        // Every thread where the kernel can (ABI 8); the child is
        // single-threaded at this point anyway.
        let status = created
            .all_threads(true)
            .and_then(|r| r.restrict_self())
            .map_err(|e| e.to_string())?;
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => LandlockLevel::Full,
            RulesetStatus::PartiallyEnforced => LandlockLevel::Partial,
            RulesetStatus::NotEnforced => {
                return Err(format!("not enforced ({:?})", status.landlock));
            }
        })
    }

    fn seccomp() -> Result<(), String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
        let rule = |conditions: Vec<SeccompCondition>| {
            SeccompRule::new(conditions).map_err(|e| e.to_string())
        };
        let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
            SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)
                .map_err(|e| e.to_string())
        };
        let dword = |arg: u8, op: SeccompCmpOp, value: u64| {
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
                .map_err(|e| e.to_string())
        };
        let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|&n| (n, Vec::new())).collect();
        // A new process (no CLONE_THREAD) is refused; a thread is not.
        denied.insert(
            libc::SYS_clone,
            vec![rule(vec![cond(
                0,
                SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
                0,
            )?])?],
        );
        // Sockets only for IPv4/IPv6 (fetch) and netlink (the resolver).
        denied.insert(
            libc::SYS_socket,
            vec![rule(vec![
                dword(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
                dword(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
                dword(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
            ])?],
        );
        let eperm = SeccompAction::Errno(libc::EPERM as u32);
        let main: BpfProgram = SeccompFilter::new(denied, SeccompAction::Allow, eperm, arch)
            .and_then(BpfProgram::try_from)
            .map_err(|e| e.to_string())?;
        // clone3's flags sit in memory a filter cannot read: ENOSYS makes
        // glibc fall back to clone, whose flags the filter above checks.
        let clone3: BpfProgram = SeccompFilter::new(
            [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .and_then(BpfProgram::try_from)
        .map_err(|e| e.to_string())?;
        seccompiler::apply_filter_all_threads(&clone3).map_err(|e| e.to_string())?;
        seccompiler::apply_filter_all_threads(&main).map_err(|e| e.to_string())
    }

    /// Refused outright (EPERM).
    const DENIED: &[i64] = &[
        libc::SYS_execve,
        libc::SYS_execveat,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_fork,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_vfork,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_kcmp,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_quotactl,
    ];

    pub(super) fn unix_socket() -> io::Result<()> {
        // SAFETY: integer arguments; the fd is closed below.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is ours.
        unsafe { libc::close(fd) };
        Ok(())
    }

    pub(super) fn fork() -> io::Result<()> {
        // SAFETY: the child only calls `_exit`, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // SAFETY: leave the forked child at once.
                unsafe { libc::_exit(0) }
            }
            pid => {
                let mut status = 0;
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(pid, &mut status, 0) };
                Ok(())
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    use super::Confinement;

    pub(super) fn apply(c: &mut Confinement) {
        c.missing
            .push("OS-level confinement is implemented for Linux only".into());
    }

    pub(super) fn kernel_view() -> (u8, u8) {
        (0, 0)
    }

    pub(super) fn unix_socket() -> io::Result<()> {
        Err(io::Error::other("not probed on this OS"))
    }

    pub(super) fn fork() -> io::Result<()> {
        Err(io::Error::other("not probed on this OS"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_read_no_new_privs_and_seccomp() {
        let status = "Name:\troot\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t2\n";
        assert_eq!(status_fields(status), (1, 2));
        assert_eq!(status_fields("Name:\troot\n"), (0, 0));
    }
}
