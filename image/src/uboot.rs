//! Booting an image through a real U-Boot under QEMU `virt` (Debian's `u-boot-qemu`).
//!
//! QEMU starts U-Boot as firmware (`-bios`) instead of our ELF (`-kernel`), with the
//! same machine, CPU, memory and devices as [`qemu_command`]. The app's legacy image
//! (`.uimg`) is placed in RAM at [`UIMAGE_ADDR`] by QEMU's generic loader, raw, as a
//! disk or network transfer would leave it. [`run_uboot`] then types on U-Boot's serial
//! console: it stops the autoboot, sets `bootargs` from the app arguments (QEMU's
//! `-append` needs `-kernel`), and runs `bootm UIMAGE_ADDR - ${fdtcontroladdr}`, so our
//! kernel gets the QEMU device tree (as U-Boot fixed it up) in x0.
//!
//! U-Boot on `virt` runs at the CPU's highest exception level: EL1 by default, EL2 with
//! `virtualization=on` ([`RunOptions::el2`]); `bootm` jumps to our entry at that level,
//! AArch64, MMU and caches off, x0 = DTB.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::board::Board;
use crate::build::{describe, Built};
use crate::error::{Error, Result};
use crate::qemu::{qemu_command, RunOptions};
use crate::run::RunOutcome;

/// Where Debian's `u-boot-qemu` package installs U-Boot for QEMU's arm64 `virt`.
pub const UBOOT_BIN: &str = "/usr/lib/u-boot/qemu_arm64/u-boot.bin";

/// Where the legacy image is placed in RAM: 128 MiB into `virt`'s RAM, clear of the DTB
/// QEMU puts at its start, of our image's load address (0x4020_0000) and of U-Boot,
/// which relocates itself to the top of RAM.
pub const UIMAGE_ADDR: u64 = 0x4800_0000;

/// What U-Boot prints while it counts down to its autoboot.
pub const AUTOBOOT_PROMPT: &str = "Hit any key to stop autoboot";

/// U-Boot's command prompt.
pub const PROMPT: &str = "=> ";

/// The U-Boot binary to use: `$FAULTLINE_UBOOT` when set, otherwise [`UBOOT_BIN`].
/// Fails, saying how to install it, when the file is missing.
pub fn uboot_bin() -> Result<PathBuf> {
    let path = std::env::var_os("FAULTLINE_UBOOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(UBOOT_BIN));
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::Options(format!(
            "U-Boot for QEMU virt is missing: no {} (install Debian's u-boot-qemu: \
             `apt-get install u-boot-qemu`, as ./run-tests.sh does)",
            path.display()
        )))
    }
}

/// The QEMU command that starts `uboot` as firmware with `built`'s legacy image in RAM
/// at [`UIMAGE_ADDR`]: the board's command line from [`qemu_command`], with `-kernel`
/// replaced and `-append` left out (U-Boot passes the arguments, see [`console_script`]).
///
/// Only `qemu-virt` boots this way under QEMU (QEMU's `xlnx-zcu102` has no U-Boot in
/// Debian).
pub fn uboot_command(built: &Built, opts: &RunOptions, uboot: &Path) -> Result<Command> {
    if built.board != Board::QemuVirt {
        return Err(Error::Options(format!(
            "booting through U-Boot under QEMU is supported on qemu-virt only, not {}",
            built.board
        )));
    }
    let uimage = built
        .uimage
        .as_ref()
        .ok_or_else(|| Error::Options(format!("{built} has no U-Boot legacy image (.uimg)")))?;
    let plain = qemu_command(built, opts)?;
    let mut cmd = Command::new(plain.get_program());
    for (key, value) in plain.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    let mut args = plain.get_args();
    while let Some(arg) = args.next() {
        if arg == "-kernel" {
            args.next();
            cmd.arg("-bios").arg(uboot).arg("-device").arg(format!(
                "loader,file={},addr={UIMAGE_ADDR:#x},force-raw=on",
                uimage.display()
            ));
        } else if arg == "-append" {
            args.next();
        } else {
            cmd.arg(arg);
        }
    }
    Ok(cmd)
}

/// The lines typed at U-Boot's prompt: the boot arguments, if any, then `bootm`.
pub fn console_script(args: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    if !args.is_empty() {
        lines.push(format!("setenv bootargs {}", args.join(" ")));
    }
    lines.push(format!("bootm {UIMAGE_ADDR:#x} - ${{fdtcontroladdr}}"));
    lines
}

/// Boots `built` through U-Boot (see [`uboot_command`]), drives its console with
/// [`console_script`], and collects everything until QEMU exits or `timeout`, if any,
/// passes (QEMU is then killed).
///
/// With `echo`, the output is also copied to this process's stdout as it arrives.
pub fn run_uboot(
    built: &Built,
    opts: &RunOptions,
    timeout: Option<Duration>,
    echo: bool,
) -> Result<RunOutcome> {
    let uboot = uboot_bin()?;
    crate::qemu::ensure_disk(built, opts.disk_size)?;
    let mut cmd = uboot_command(built, opts, &uboot)?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t);
    crate::child::dies_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting `{}`", describe(&cmd)), e))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || forward_chunks(stream, tx));
    }
    drop(tx);

    let mut output = Vec::<u8>::new();
    let mut script = console_script(&opts.args).into_iter();
    // What the console must show before the next input, and where the search starts.
    let mut waiting_for = Some(AUTOBOOT_PROMPT);
    let mut seen_up_to = 0;
    let mut timed_out = false;
    loop {
        if let Some(text) = waiting_for {
            if let Some(at) = find(&output[seen_up_to..], text.as_bytes()) {
                seen_up_to += at + text.len();
                let input = if text == AUTOBOOT_PROMPT {
                    // Any key stops the countdown; U-Boot then prints its prompt.
                    Some(" ".to_string())
                } else {
                    script.next().map(|line| line + "\r")
                };
                match input {
                    Some(input) => {
                        // QEMU may already be gone; its exit is noticed below.
                        let _ = stdin.write_all(input.as_bytes());
                        let _ = stdin.flush();
                        waiting_for = if script.len() > 0 || text == AUTOBOOT_PROMPT {
                            Some(PROMPT)
                        } else {
                            None
                        };
                    }
                    None => waiting_for = None,
                }
                continue;
            }
        }
        let next = match deadline {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(chunk) => {
                if echo {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&chunk);
                    let _ = out.flush();
                }
                output.extend_from_slice(&chunk);
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                timed_out = true;
                break;
            }
        }
    }
    drop(stdin);
    if timed_out {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("waiting for `{}`", describe(&cmd)), e))?;
    Ok(RunOutcome {
        status: if timed_out { None } else { status.code() },
        output: String::from_utf8_lossy(&output).into_owned(),
        timed_out,
        wall: start.elapsed(),
    })
}

/// Sends what `stream` yields, as it arrives, down `tx` (U-Boot's prompt has no newline,
/// so the console is read in chunks, not lines).
fn forward_chunks(mut stream: impl Read, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        }
    }
}

/// The offset of the first `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(board: Board) -> Built {
        Built::hello(board, Some(PathBuf::from("/img/hello.uimg")), 0x4020_0000)
    }

    #[test]
    fn command_swaps_kernel_for_bios_and_loader() {
        let opts = RunOptions {
            args: vec!["a".into(), "b=1".into()],
            ..RunOptions::default()
        };
        let cmd =
            uboot_command(&built(Board::QemuVirt), &opts, Path::new("/u/u-boot.bin")).unwrap();
        let line = describe(&cmd);
        assert!(
            line.starts_with(
                "qemu-system-aarch64 -M virt,gic-version=2,iommu=smmuv3 -cpu cortex-a53 "
            ),
            "{line}"
        );
        assert!(
            line.contains(
                " -semihosting -no-reboot -bios /u/u-boot.bin \
                 -device loader,file=/img/hello.uimg,addr=0x48000000,force-raw=on "
            ),
            "{line}"
        );
        assert!(
            !line.contains("-kernel") && !line.contains("-append"),
            "{line}"
        );
    }

    #[test]
    fn only_qemu_virt() {
        let err = uboot_command(
            &built(Board::Zcu102),
            &RunOptions::default(),
            Path::new("/u"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("qemu-virt only"), "{err}");
    }

    #[test]
    fn script_sets_bootargs_then_boots() {
        assert_eq!(
            console_script(&[]),
            ["bootm 0x48000000 - ${fdtcontroladdr}"]
        );
        assert_eq!(
            console_script(&["x".into(), "y".into()]),
            [
                "setenv bootargs x y",
                "bootm 0x48000000 - ${fdtcontroladdr}"
            ]
        );
    }
}
