//! A Linux node beside the Faultline nodes: Debian's arm64 kernel with
//! soft-RoCE (`rdma_rxe`) and rdma-core's and perftest's programs, under
//! QEMU on the cluster's bridge (`image/linux-rxe/` builds and caches it).
//!
//! ```text
//!   bridge namespace: br0 ── v0 ═ node 0 (engine 10.47.0.1, QEMU: TCP 10.47.0.1:18515 → guest)
//!                        └── tapl ═ QEMU ═ Linux eth0 10.47.0.100, rxe0
//! ```
//!
//! Each Linux guest runs a shell script given by the caller, after rxe0 is
//! up; the script sees `$PEER` (node 0's address), `$NODE0`, `$NODE1`, …
//! (every node's), `$LINUX0`, `$LINUX1`, … (every Linux guest's), `$SELF`
//! (its own), `$GID` (rxe0's GID index of its IPv4 address, for `-g`),
//! and `connect_retry CMD…`, which runs CMD again while it fails for want
//! of a listener (the other side may not listen yet). Everything the
//! guest prints is the outcome's output; the guest powers off when the
//! script ends, after printing `rxe-guest: script exit N`.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the Linux node does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinuxPeer {
    /// The shell script it runs once rxe0 is up.
    pub script: String,
}

/// The guest's kernel and initramfs, built (once) by
/// `image/linux-rxe/guest.sh build`.
pub fn guest_files(root: &Path) -> Result<(PathBuf, PathBuf)> {
    let dir = root.join("target/linux-rxe");
    let status = Command::new(root.join("image/linux-rxe/guest.sh"))
        .arg("build")
        .current_dir(root)
        .status()
        .map_err(|e| Error::Options(format!("running image/linux-rxe/guest.sh: {e}")))?;
    if !status.success() {
        return Err(Error::Options(format!(
            "image/linux-rxe/guest.sh build failed ({status}): the Linux peer cannot boot"
        )));
    }
    Ok((dir.join("Image"), dir.join("initramfs.gz")))
}

/// One file in the cpio "newc" format the kernel unpacks from an initrd.
fn cpio_entry(out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]) {
    let namesize = name.len() + 1;
    let header = format!(
        "070701{ino:08x}{mode:08x}{uid:08x}{gid:08x}{nlink:08x}{mtime:08x}{size:08x}\
         {dmaj:08x}{dmin:08x}{rdmaj:08x}{rdmin:08x}{namesize:08x}{check:08x}",
        ino = 1,
        uid = 0,
        gid = 0,
        nlink = 1,
        mtime = 0,
        size = data.len(),
        dmaj = 0,
        dmin = 0,
        rdmaj = 0,
        rdmin = 0,
        check = 0,
    );
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
    out.extend_from_slice(data);
    pad4(out);
}

/// Zeros up to the next 4-byte boundary (cpio's alignment).
fn pad4(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(4), 0);
}

/// The lines that give a script the cluster's addresses (see the module's
/// doc): `nodes` Faultline nodes, `linux` Linux guests, this one `me`.
pub fn environment(nodes: u16, linux: usize, me: usize) -> String {
    let mut env = String::new();
    for r in 0..nodes {
        env += &format!("export NODE{r}={}\n", crate::netns::node_addr(r));
    }
    for i in 0..linux {
        env += &format!("export LINUX{i}={}\n", crate::netns::linux_addr(i));
    }
    env + &format!("export SELF={}\n", crate::netns::linux_addr(me))
}

/// The guest's initramfs with `/task.sh` (the script) appended: the kernel
/// unpacks archives one after the other into the same root.
pub fn initrd_with_script(base: &Path, script: &str, out: &Path) -> Result<()> {
    let mut data = std::fs::read(base).map_err(|e| Error::io(base.display().to_string(), e))?;
    // Each archive starts on a 4-byte boundary after the previous one.
    pad4(&mut data);
    let mut cpio = Vec::new();
    cpio_entry(&mut cpio, "task.sh", 0o100_755, script.as_bytes());
    cpio_entry(&mut cpio, "TRAILER!!!", 0, b"");
    data.extend_from_slice(&cpio);
    std::fs::write(out, data).map_err(|e| Error::io(out.display().to_string(), e))
}

/// The QEMU command of Linux guest `i` (to run in the bridge's namespace),
/// with `initrd` made by [`initrd_with_script`] and node 0 at `peer`.
pub fn qemu_command(kernel: &Path, initrd: &Path, i: usize, peer: std::net::Ipv4Addr) -> Command {
    let mut cmd = Command::new("qemu-system-aarch64");
    cmd.args(["-M", "virt", "-cpu", "cortex-a57", "-smp", "2", "-m", "1G"])
        .args([
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
            "-serial",
            "stdio",
        ])
        .args([
            "-netdev",
            &format!(
                "tap,id=n0,ifname={},script=no,downscript=no",
                crate::netns::linux_tap(i)
            ),
        ])
        .args([
            "-device",
            &format!(
                "virtio-net-pci,netdev=n0,mac=52:54:00:2f:00:{:02x},host_mtu=9000",
                0x64 + i
            ),
        ])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        .args([
            "-append",
            &format!(
                "console=ttyAMA0 rdinit=/init quiet rxe.task=script rxe.addr={} rxe.peer={peer}",
                crate::netns::linux_addr(i)
            ),
        ]);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_rides_in_a_second_cpio_archive() {
        let dir = std::env::temp_dir().join(format!("linux-peer-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("base");
        std::fs::write(&base, b"gzip bytes").unwrap();
        let out = dir.join("initrd");
        initrd_with_script(&base, "echo hi\n", &out).unwrap();
        let data = std::fs::read(&out).unwrap();
        assert!(data.starts_with(b"gzip bytes\0\0"), "padded to 4 bytes");
        let cpio = &data[12..];
        assert!(cpio.starts_with(b"070701"));
        let text = String::from_utf8_lossy(cpio);
        assert!(text.contains("task.sh\0"));
        assert!(text.contains("echo hi\n"));
        assert!(text.contains("TRAILER!!!"));
        // The size field (the 7th) says 8 bytes.
        assert_eq!(&cpio[6 + 6 * 8..6 + 7 * 8], b"00000008");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
