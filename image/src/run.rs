//! Booting an image under QEMU: capture what it prints, enforce a time limit, report how
//! it ended. Used by the CLI's `run` and by QEMU boot tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crate::build::{describe, Built};
use crate::error::{Error, Result};
use crate::qemu::{qemu_command, RunOptions, QEMU};

/// How a QEMU run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// QEMU's exit status, which is the guest's semihosting exit code; `None` when QEMU
    /// was killed (always the case on timeout).
    pub status: Option<i32>,
    /// Everything QEMU wrote to stdout (the guest's serial port) and stderr, in the order
    /// the lines arrived; invalid UTF-8 is replaced.
    pub output: String,
    /// Whether the time limit was hit and QEMU killed.
    pub timed_out: bool,
    /// Time from starting QEMU to its exit.
    pub wall: Duration,
}

impl RunOutcome {
    /// Whether the guest exited on its own with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0) && !self.timed_out
    }
}

/// Boots `built` with `opts`; see [`run_command`].
pub fn run(
    built: &Built,
    opts: &RunOptions,
    timeout: Option<Duration>,
    echo: bool,
) -> Result<RunOutcome> {
    crate::qemu::ensure_disk(built, opts.disk_size)?;
    run_command(qemu_command(built, opts)?, timeout, echo)
}

/// Runs a command (normally QEMU) with no input, collecting its stdout and stderr.
///
/// With `echo`, each line is also written to this process's stdout as it arrives. With a
/// `timeout`, the process is killed once it has run that long.
pub fn run_command(cmd: Command, timeout: Option<Duration>, echo: bool) -> Result<RunOutcome> {
    run_watched(cmd, timeout, echo.then_some(""), None, None)
}

/// The byte the guest reads on its console as a request to stop cleanly
/// (`libos::console::STOP_BYTE`).
pub const STOP_BYTE: u8 = 0x04;

/// How long a guest asked to stop may take before QEMU is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// Like [`run`], and when `asked` becomes true (the CLI sets it on SIGINT or
/// SIGTERM) the guest is asked to stop: [`STOP_BYTE`] on its console, then
/// [`STOP_GRACE`] to exit before QEMU is killed. QEMU runs in a process
/// group of its own, so a terminal's Ctrl-C reaches only this tool.
pub fn run_stoppable(
    built: &Built,
    opts: &RunOptions,
    timeout: Option<Duration>,
    echo: bool,
    asked: &AtomicBool,
) -> Result<RunOutcome> {
    crate::qemu::ensure_disk(built, opts.disk_size)?;
    let mut cmd = qemu_command(built, opts)?;
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    run_watched(cmd, timeout, echo.then_some(""), None, Some(asked))
}

/// [`run_command`] for one of several processes: echoed lines get `prefix`, and
/// setting `stop` kills the process early (counted as a timeout).
pub fn run_watched(
    mut cmd: Command,
    timeout: Option<Duration>,
    prefix: Option<&str>,
    stop: Option<&AtomicBool>,
    asked: Option<&AtomicBool>,
) -> Result<RunOutcome> {
    let stdin = if asked.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    crate::child::dies_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| spawn_error(&cmd, e))?;
    let mut deadline = timeout.map(|t| start + t);

    let (tx, rx) = mpsc::channel();
    // The reader threads are detached: they end when their pipe closes.
    if let Some(stdout) = child.stdout.take() {
        forward_lines(stdout, tx.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        forward_lines(stderr, tx.clone());
    }
    drop(tx);

    let mut output = Vec::new();
    let echo = Echo { prefix, stop };
    let mut timed_out = !collect(&rx, deadline, &echo, asked, &mut output);
    if let (true, Some(asked), Some(mut console)) = (timed_out, asked, child.stdin.take()) {
        if asked.load(Ordering::Relaxed) {
            // A signal, not the deadline: ask the guest to stop, and wait.
            eprintln!(
                "faultline: asking the guest to stop; QEMU is killed if it has not in {} s",
                STOP_GRACE.as_secs()
            );
            let _ = console.write_all(&[STOP_BYTE]);
            let _ = console.flush();
            deadline = Some(Instant::now() + STOP_GRACE);
            timed_out = !collect(&rx, deadline, &echo, None, &mut output);
        }
    }
    let status = if timed_out {
        kill(&mut child)?
    } else {
        // The pipes close when QEMU exits, so this normally returns at once; the deadline
        // still applies in case it has not.
        wait_until(&mut child, deadline)?
    };
    let wall = start.elapsed();
    let timed_out = timed_out || status.is_none();
    // Pick up the last lines. The pipes close when the process dies, unless something it
    // started still holds them, so wait only briefly and leave such readers behind.
    let grace = Instant::now() + Duration::from_millis(500);
    while let Ok(line) = rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
        take(line, &echo, &mut output);
    }
    Ok(RunOutcome {
        status: status.and_then(|s| s.code()),
        output: String::from_utf8_lossy(&output).into_owned(),
        timed_out,
        wall,
    })
}

/// Explains a failure to start the command, with a hint when QEMU is not installed.
fn spawn_error(cmd: &Command, e: std::io::Error) -> Error {
    let what = if e.kind() == std::io::ErrorKind::NotFound && cmd.get_program() == QEMU {
        format!("starting {QEMU} (not installed? `apt-get install qemu-system-arm`)")
    } else {
        format!("starting `{}`", describe(cmd))
    };
    Error::io(what, e)
}

/// Reads `stream` line by line on a thread of its own, sending each line (with its
/// newline, if any) down `tx`.
fn forward_lines(stream: impl Read + Send + 'static, tx: mpsc::Sender<Vec<u8>>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// Where echoed lines go and what may stop a run early.
struct Echo<'a> {
    /// Echo each line to stdout with this prefix (`None`: no echo).
    prefix: Option<&'a str>,
    /// Set by someone else to end the run (as if the deadline had passed).
    stop: Option<&'a AtomicBool>,
}

/// Gathers lines until both streams close (returns true) or the deadline passes or
/// `stop` or `asked` is set (returns false).
fn collect(
    rx: &Receiver<Vec<u8>>,
    deadline: Option<Instant>,
    echo: &Echo,
    asked: Option<&AtomicBool>,
    out: &mut Vec<u8>,
) -> bool {
    // Without a flag a line or the deadline ends each wait; with one, wake up
    // now and then to look at it.
    let tick = Duration::from_millis(100);
    let flags = [echo.stop, asked];
    loop {
        if flags.iter().flatten().any(|s| s.load(Ordering::Relaxed)) {
            return false;
        }
        let now = Instant::now();
        let wait = match (deadline, flags.iter().any(Option::is_some)) {
            (Some(d), true) => Some(d.saturating_duration_since(now).min(tick)),
            (Some(d), false) => Some(d.saturating_duration_since(now)),
            (None, true) => Some(tick),
            (None, false) => None,
        };
        let line = match wait {
            None => match rx.recv() {
                Ok(line) => line,
                Err(_) => return true,
            },
            Some(wait) => match rx.recv_timeout(wait) {
                Ok(line) => line,
                Err(RecvTimeoutError::Disconnected) => return true,
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return false;
                    }
                    continue;
                }
            },
        };
        take(line, echo, out);
    }
}

/// Appends a line to the output and, when echoing, copies it to stdout.
fn take(line: Vec<u8>, echo: &Echo, out: &mut Vec<u8>) {
    if let Some(prefix) = echo.prefix {
        let mut stdout = std::io::stdout().lock();
        // A closed stdout (e.g. piped into `head`) must not stop the run.
        let _ = stdout.write_all(prefix.as_bytes());
        let _ = stdout.write_all(&line);
        let _ = stdout.flush();
    }
    out.extend_from_slice(&line);
}

/// Waits for the child to exit, killing it at the deadline. Returns `None` if it had to
/// be killed.
fn wait_until(
    child: &mut Child,
    deadline: Option<Instant>,
) -> Result<Option<std::process::ExitStatus>> {
    let Some(deadline) = deadline else {
        return child
            .wait()
            .map(Some)
            .map_err(|e| Error::io("waiting for QEMU", e));
    };
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::io("waiting for QEMU", e))?
        {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            kill(child)?;
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Kills the child and reaps it. Always reports `None`: a killed run has no guest status.
fn kill(child: &mut Child) -> Result<Option<std::process::ExitStatus>> {
    // It may have exited just now; killing an exited (unreaped) child is harmless.
    let _ = child.kill();
    child
        .wait()
        .map_err(|e| Error::io("waiting for QEMU after killing it", e))?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn captures_both_streams_and_status() {
        let out = run_command(
            sh("echo one; echo two >&2; printf tail; exit 3"),
            None,
            false,
        )
        .unwrap();
        assert_eq!(out.status, Some(3));
        assert!(!out.timed_out);
        assert!(!out.success());
        for part in ["one\n", "two\n", "tail"] {
            assert!(out.output.contains(part), "{:?}", out.output);
        }
    }

    #[test]
    fn success_is_status_zero() {
        let out = run_command(sh("true"), Some(Duration::from_secs(30)), false).unwrap();
        assert!(out.success());
        assert_eq!(out.output, "");
    }

    #[test]
    fn kills_at_the_timeout() {
        let t0 = Instant::now();
        let out = run_command(
            sh("echo started; exec sleep 30"),
            Some(Duration::from_millis(300)),
            false,
        )
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.status, None);
        assert_eq!(out.output, "started\n");
        assert!(out.wall >= Duration::from_millis(300));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_leftover_grandchild_does_not_hang_the_run() {
        let t0 = Instant::now();
        let out = run_command(
            sh("sleep 30 & exec sleep 30"),
            Some(Duration::from_millis(200)),
            false,
        )
        .unwrap();
        assert!(out.timed_out);
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_stop_flag_ends_the_run() {
        let stop = AtomicBool::new(true);
        let t0 = Instant::now();
        let out = run_watched(sh("exec sleep 30"), None, None, Some(&stop), None).unwrap();
        assert!(out.timed_out);
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn stdin_is_empty() {
        let out = run_command(sh("cat; echo done"), Some(Duration::from_secs(30)), false).unwrap();
        assert_eq!(out.output, "done\n");
    }

    #[test]
    fn missing_program_is_a_clear_error() {
        let err =
            run_command(Command::new("/nonexistent/faultline-qemu"), None, false).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/faultline-qemu"),
            "{err}"
        );
    }
}
