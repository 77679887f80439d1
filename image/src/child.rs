//! Child processes that do not outlive the image tool.
//!
//! QEMU runs in a process group of its own (so a terminal's Ctrl-C reaches
//! only this tool, see [`crate::run::run_stoppable`]), and a `kill -9` of
//! the runner's process group — what CI timeouts and `timeout -s KILL` do —
//! leaves it behind, still holding its forwarded port and its disk. Every
//! QEMU and RDMA engine the tool starts therefore asks the kernel to kill it
//! when the tool goes away, however it goes.
//!
//! Linux sends the parent-death signal when the *thread* that started the
//! child ends, not the whole process. Every spawn site of the tool waits for
//! its child, or kills it, on the thread that started it before that thread
//! returns (`run::run_watched`, `uboot::run_uboot`, `cluster`'s
//! engines, each started and finished by `run_cluster`'s thread), so the
//! signal comes only when the tool really died or a thread unwound through
//! a panic while its child ran — and then the child should die too.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the process `cmd` starts receive SIGKILL when the thread that
/// starts it, and with it this tool, ends: no QEMU or engine is left
/// running, holding ports and disks, after the tool was killed.
///
/// If the tool already died between the fork and the request (so the
/// signal will never come), the child exits instead of running the program.
/// The thread that spawns `cmd` must live as long as the child (see the
/// module documentation).
pub fn dies_with_parent(cmd: &mut Command) -> &mut Command {
    // Captured before the fork: after it, a changed parent means the tool
    // died before the child asked for the signal.
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is allowed: it calls prctl and getppid
    // (both plain system calls), allocates nothing and takes no lock, and
    // its error values are built from plain integers.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                // Reparented already: the spawn fails in the child, which exits.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    /// Whether process `pid` is running (present and not a zombie).
    fn running(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name in parentheses.
            Ok(stat) => !matches!(
                stat.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().as_bytes()[0]),
                Some(b'Z' | b'X')
            ),
            Err(_) => false,
        }
    }

    /// A child spawned from a thread dies when that thread ends; without
    /// [`dies_with_parent`] it would sleep on for a minute.
    #[test]
    fn the_child_dies_with_the_spawning_thread() {
        let (pid, mut child) = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("60").stdin(Stdio::null());
            dies_with_parent(&mut cmd);
            let child = cmd.spawn().unwrap();
            (child.id(), child)
        })
        .join()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "child {pid} still runs after its thread ended"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(!running(pid));
    }

    /// The program runs normally while the tool lives.
    #[test]
    fn the_child_runs_normally() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 7"]);
        let status = dies_with_parent(&mut cmd).status().unwrap();
        assert_eq!(status.code(), Some(7));
    }
}
