//! The QEMU command line for each board, kept in one place so the CLI and the boot
//! tests start the guest the same way.

use std::process::Command;

use crate::board::Board;
use crate::bootargs;
use crate::build::Built;
use crate::error::{Error, Result};

/// The QEMU binary used for every board.
pub const QEMU: &str = "qemu-system-aarch64";
/// CPUs on `qemu-virt` unless `--smp` says otherwise.
pub const DEFAULT_SMP: u32 = 4;
/// The most CPUs a GICv2 can route interrupts to (QEMU refuses more on `virt`).
pub const VIRT_MAX_SMP: u32 = 8;
/// The zcu102 has exactly this many Cortex-A53 application cores.
pub const ZCU102_CPUS: u32 = 4;

/// How to boot a built image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Number of CPUs; `None` is the board's default (4 on both boards).
    pub smp: Option<u32>,
    /// Start the CPUs at EL2 (QEMU's `virtualization=on`) instead of EL1.
    pub el2: bool,
    /// Guest command line, passed with `-append` where the board has a device tree.
    pub args: Vec<String>,
    /// Extra QEMU arguments, appended last (e.g. `-d int` or `-s -S` for debugging).
    pub extra: Vec<String>,
    /// Give the guest a virtio-net NIC on QEMU user networking and forward
    /// this host port (on 127.0.0.1) to the guest's port 6379 (qemu-virt).
    pub port: Option<u16>,
    /// More TCP forwards on the same NIC (qemu-virt): connections to the
    /// address (in QEMU's network namespace) reach the guest's port. A
    /// node of a cluster with a Linux peer takes the out-of-band exchange
    /// of Linux's RDMA programs this way.
    pub forward: Vec<(std::net::SocketAddrV4, u16)>,
    /// Attach this node's RDMA engine (qemu-virt; see [`crate::cluster`]).
    pub rdma: Option<RdmaAttach>,
    /// Size of the NVMe disk: a new disk is made this big, a smaller one
    /// grows to it (`None`: [`DISK_SIZE`] for a new disk, an old one as it is).
    pub disk_size: Option<u64>,
    /// Attach the NVMe disk read-only: every write the guest makes to it
    /// fails, as on a disk gone bad (how the tests make a failing disk).
    pub disk_read_only: bool,
}

/// Where a node's RDMA engine listens, and which node it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaAttach {
    /// The engine's vhost-user socket.
    pub socket: std::path::PathBuf,
    /// The node's rank (the last byte of the engine's MAC address).
    pub rank: u8,
}

/// Guest RAM on `qemu-virt`. With an RDMA engine it is a shared memfd, so
/// the engine process can map it.
pub const VIRT_RAM: &str = "2G";

/// Checks that `opts` fit `board`, so a bad `--smp` is reported before a long build.
pub fn check_options(board: Board, opts: &RunOptions) -> Result<()> {
    match board {
        Board::QemuVirt => {
            let smp = opts.smp.unwrap_or(DEFAULT_SMP);
            if !(1..=VIRT_MAX_SMP).contains(&smp) {
                return Err(Error::Options(format!(
                    "qemu-virt with GICv2 supports 1 to {VIRT_MAX_SMP} CPUs; --smp {smp} is out of range"
                )));
            }
        }
        Board::Zcu102 => {
            if opts.smp.is_some_and(|n| n != ZCU102_CPUS) {
                return Err(Error::Options(
                    "zcu102 has 4 Cortex-A53 cores; --smp is fixed".into(),
                ));
            }
        }
    }
    if board == Board::Zcu102 {
        if let Some(size) = opts.disk_size.filter(|s| !s.is_power_of_two()) {
            return Err(Error::Options(format!(
                "--disk-size {size}: on zcu102 the disk is an SD card, and QEMU's SD cards must be a power of two in size"
            )));
        }
    }
    bootargs::command_line(&opts.args)?;
    Ok(())
}

/// The QEMU command that boots `built` with `opts`.
///
/// The command is returned unstarted so callers choose how to wire its standard streams.
/// Fails when the options do not fit the board (see [`check_options`]).
pub fn qemu_command(built: &Built, opts: &RunOptions) -> Result<Command> {
    check_options(built.board, opts)?;
    let mut cmd = Command::new(QEMU);
    match built.board {
        Board::QemuVirt => {
            let smp = opts.smp.unwrap_or(DEFAULT_SMP);
            let mut machine = String::from("virt,gic-version=2,iommu=smmuv3");
            if opts.el2 {
                machine += ",virtualization=on";
            }
            if opts.rdma.is_some() {
                machine += ",memory-backend=ram";
            }
            cmd.args(["-M", &machine, "-cpu", "cortex-a53"]).args([
                "-smp",
                &smp.to_string(),
                "-m",
                VIRT_RAM,
            ]);
        }
        Board::Zcu102 => {
            let mut machine = String::from("xlnx-zcu102");
            if opts.el2 {
                machine += ",virtualization=on";
            }
            cmd.args(["-M", &machine, "-m", "2G"]);
            // The board's DisplayPort has an audio device; without this QEMU 7.2 tries
            // ALSA and fills stderr with failures on machines without sound.
            cmd.env("QEMU_AUDIO_DRV", "none");
            // The disk beside the image is the SD card in slot 0 (SD0);
            // QEMU's SD model takes only power-of-two sizes.
            let disk = node_disk_path(built, 0);
            cmd.arg("-drive").arg(format!(
                "if=sd,index=0,format=raw,file={}{}",
                disk.display(),
                if opts.disk_read_only {
                    ",readonly=on"
                } else {
                    ""
                }
            ));
            if let Some(port) = opts.port {
                // The machine gives the command line's NICs to GEM0-3 in
                // order; the ZCU102 wires GEM3 to its RJ45, and so does
                // the board description. GEM0-2 get a hub port that leads
                // nowhere (their PHYs still answer, as on the real board).
                if let Some(object) = crate::backlog::preload(&crate::workspace_root()) {
                    cmd.env("LD_PRELOAD", object);
                }
                for hub in 1..=3 {
                    cmd.arg("-nic")
                        .arg(format!("hubport,hubid={hub},model=cadence_gem"));
                }
                cmd.arg("-nic").arg(format!(
                    "user,model=cadence_gem,hostfwd=tcp:127.0.0.1:{port}-:{GUEST_PORT}"
                ));
            }
        }
    }
    cmd.args(["-display", "none", "-serial", "stdio", "-monitor", "none"])
        .args(["-semihosting", "-no-reboot", "-kernel"])
        .arg(&built.elf);
    if built.board == Board::QemuVirt {
        // The DMA devices behind the SMMU: edu for deterministic tests, and an
        // NVMe disk kept beside the image, so data survives a restart.
        let disk = node_disk_path(built, opts.rdma.as_ref().map_or(0, |r| r.rank));
        cmd.args(["-device", "edu", "-drive"])
            .arg(format!(
                "if=none,id=nvm,format=raw,file={}{}",
                disk.display(),
                if opts.disk_read_only {
                    ",readonly=on"
                } else {
                    ""
                }
            ))
            .args(["-device", "nvme,drive=nvm,serial=faultline"]);
        if opts.port.is_some() || !opts.forward.is_empty() {
            let mut netdev = String::from("user,id=net0");
            if let Some(port) = opts.port {
                if let Some(object) = crate::backlog::preload(&crate::workspace_root()) {
                    cmd.env("LD_PRELOAD", object);
                }
                netdev += &format!(",hostfwd=tcp:127.0.0.1:{port}-:{GUEST_PORT}");
            }
            for (from, to) in &opts.forward {
                netdev += &format!(",hostfwd=tcp:{}:{}-:{to}", from.ip(), from.port());
            }
            cmd.arg("-netdev")
                .arg(netdev)
                .args(["-device", "virtio-net-pci,netdev=net0"]);
        }
        if let Some(rdma) = &opts.rdma {
            // The engine reaches guest memory through the shared memfd, and
            // every access is translated by the SMMU (iommu_platform; ats=off
            // so guest TLB invalidations reach the engine as IOTLB unmaps).
            let mac = hw_mac(rdma.rank);
            cmd.arg("-object")
                .arg(format!("memory-backend-memfd,id=ram,size={VIRT_RAM},share=on"))
                .arg("-chardev")
                .arg(format!("socket,id=rdma,path={}", rdma.socket.display()))
                .args(["-netdev", "vhost-user,id=rdma,chardev=rdma", "-device"])
                .arg(format!(
                    "virtio-net-pci,netdev=rdma,iommu_platform=on,ats=off,disable-legacy=on,mac={mac}"
                ));
        }
        if !opts.args.is_empty() {
            cmd.arg("-append").arg(opts.args.join(" "));
        }
    }
    cmd.args(&opts.extra);
    Ok(cmd)
}

/// The engine's MAC on node `rank`, as QEMU writes it (see `hw::rdma`).
fn hw_mac(rank: u8) -> String {
    let p = RDMA_MAC_PREFIX;
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{rank:02x}",
        p[0], p[1], p[2], p[3], p[4]
    )
}

/// First five bytes of every RDMA engine's MAC; the guest driver finds its
/// engine by them (the same bytes as `hw::rdma::MAC_PREFIX`).
pub const RDMA_MAC_PREFIX: [u8; 5] = [0x02, 0xfa, 0x17, 0x0d, 0x4a];

/// Guest TCP port `RunOptions::port` forwards to (kvstore's).
pub const GUEST_PORT: u16 = 6379;

/// Size of the NVMe disk image created on first use (sparse).
pub const DISK_SIZE: u64 = 1 << 30;

/// The NVMe disk image of an app: `<image dir>/<app>.disk`.
pub fn disk_path(built: &Built) -> std::path::PathBuf {
    built.elf.with_extension("disk")
}

/// The NVMe disk of node `rank` in a multi-node run: node 0 uses the app's
/// disk, node R its own `<app>.nR.disk` (QEMU locks a disk for one user).
pub fn node_disk_path(built: &Built, rank: u8) -> std::path::PathBuf {
    match rank {
        0 => disk_path(built),
        r => built.elf.with_extension(format!("n{r}.disk")),
    }
}

/// Creates the app's (sparse, zeroed) disk image if it does not exist yet,
/// or grows it to `size` (see [`RunOptions::disk_size`]).
pub fn ensure_disk(built: &Built, size: Option<u64>) -> Result<()> {
    ensure_node_disk(built, 0, size)
}

/// Creates node `rank`'s disk image if it does not exist yet, or grows it
/// to `size`. A disk is never shrunk: that would cut its data away.
pub fn ensure_node_disk(built: &Built, rank: u8, size: Option<u64>) -> Result<()> {
    ensure_disk_file(&node_disk_path(built, rank), size)
}

/// [`ensure_node_disk`] for a path.
pub fn ensure_disk_file(path: &std::path::Path, size: Option<u64>) -> Result<()> {
    let io = |e| Error::io(path.display().to_string(), e);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io)?;
    let now = file.metadata().map_err(io)?.len();
    let want = match (size, now) {
        (None, 0) => DISK_SIZE,
        (None, now) => now,
        (Some(size), now) if size < now => {
            return Err(Error::Options(format!(
                "--disk-size {size}: {} is already {now} bytes, and a disk is never shrunk (its log would be cut)",
                path.display()
            )))
        }
        (Some(size), _) => size,
    };
    if want != now {
        file.set_len(want).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn built(board: Board) -> Built {
        Built::hello(board, None, 0x4008_0000)
    }

    fn argv(cmd: &Command) -> String {
        let mut parts = vec![cmd.get_program().to_str().unwrap().to_string()];
        parts.extend(cmd.get_args().map(|a| a.to_str().unwrap().to_string()));
        parts.join(" ")
    }

    #[test]
    fn qemu_virt_defaults() {
        let cmd = qemu_command(&built(Board::QemuVirt), &RunOptions::default()).unwrap();
        assert_eq!(
            argv(&cmd),
            "qemu-system-aarch64 -M virt,gic-version=2,iommu=smmuv3 -cpu cortex-a53 -smp 4 \
             -m 2G -display none -serial stdio -monitor none -semihosting -no-reboot \
             -kernel /img/hello.elf -device edu -drive if=none,id=nvm,format=raw,file=/img/hello.disk \
             -device nvme,drive=nvm,serial=faultline"
        );
    }

    #[test]
    fn qemu_virt_with_everything() {
        let opts = RunOptions {
            smp: Some(2),
            el2: true,
            args: vec!["a=1".into(), "b".into()],
            extra: vec!["-d".into(), "int".into()],
            port: Some(16379),
            forward: vec![("10.47.0.1:18515".parse().unwrap(), 18515)],
            rdma: None,
            disk_size: None,
            disk_read_only: false,
        };
        let cmd = qemu_command(&built(Board::QemuVirt), &opts).unwrap();
        let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args[1], "virt,gic-version=2,iommu=smmuv3,virtualization=on");
        assert!(argv(&cmd).contains(" -smp 2 "));
        // The command line stays one argument; extra arguments come last.
        assert_eq!(&args[args.len() - 4..], ["-append", "a=1 b", "-d", "int"]);
        assert!(argv(&cmd).contains(
            " -netdev user,id=net0,hostfwd=tcp:127.0.0.1:16379-:6379,hostfwd=tcp:10.47.0.1:18515-:18515 -device virtio-net-pci,netdev=net0 "
        ));
    }

    #[test]
    fn qemu_virt_with_an_rdma_engine() {
        let opts = RunOptions {
            rdma: Some(RdmaAttach {
                socket: PathBuf::from("/tmp/n1.sock"),
                rank: 1,
            }),
            ..RunOptions::default()
        };
        let line = argv(&qemu_command(&built(Board::QemuVirt), &opts).unwrap());
        assert!(line.contains("-M virt,gic-version=2,iommu=smmuv3,memory-backend=ram "));
        assert!(line.contains(" -object memory-backend-memfd,id=ram,size=2G,share=on "));
        assert!(line.contains(
            " -chardev socket,id=rdma,path=/tmp/n1.sock -netdev vhost-user,id=rdma,chardev=rdma "
        ));
        assert!(line.ends_with(
            "-device virtio-net-pci,netdev=rdma,iommu_platform=on,ats=off,disable-legacy=on,mac=02:fa:17:0d:4a:01"
        ));
        assert!(
            line.contains("file=/img/hello.n1.disk "),
            "each node its own disk"
        );
    }

    #[test]
    fn qemu_virt_cpu_range() {
        let b = built(Board::QemuVirt);
        for n in [0, 9] {
            let opts = RunOptions {
                smp: Some(n),
                ..RunOptions::default()
            };
            assert!(qemu_command(&b, &opts).is_err(), "smp {n}");
        }
        let opts = RunOptions {
            smp: Some(8),
            ..RunOptions::default()
        };
        assert!(qemu_command(&b, &opts).is_ok());
    }

    #[test]
    fn a_zcu102_sd_card_must_be_a_power_of_two() {
        let opts = |size| RunOptions {
            disk_size: Some(size),
            ..RunOptions::default()
        };
        let b = built(Board::Zcu102);
        let e = qemu_command(&b, &opts(3 << 30)).unwrap_err().to_string();
        assert!(e.contains("power of two"), "{e}");
        assert!(qemu_command(&b, &opts(4 << 30)).is_ok());
        assert!(qemu_command(&built(Board::QemuVirt), &opts(3 << 30)).is_ok());
    }

    #[test]
    fn zcu102_line() {
        let opts = RunOptions {
            args: vec!["ignored-here".into()],
            ..RunOptions::default()
        };
        let cmd = qemu_command(&built(Board::Zcu102), &opts).unwrap();
        assert_eq!(
            argv(&cmd),
            "qemu-system-aarch64 -M xlnx-zcu102 -m 2G \
             -drive if=sd,index=0,format=raw,file=/img/hello.disk -display none -serial stdio \
             -monitor none -semihosting -no-reboot -kernel /img/hello.elf"
        );
        let el2 = RunOptions {
            el2: true,
            smp: Some(4),
            ..RunOptions::default()
        };
        let cmd = qemu_command(&built(Board::Zcu102), &el2).unwrap();
        assert!(argv(&cmd).contains("-M xlnx-zcu102,virtualization=on "));
    }

    #[test]
    fn zcu102_cpu_count_is_fixed() {
        let opts = RunOptions {
            smp: Some(2),
            ..RunOptions::default()
        };
        let err = qemu_command(&built(Board::Zcu102), &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "zcu102 has 4 Cortex-A53 cores; --smp is fixed"
        );
    }

    #[test]
    fn append_args_are_checked_like_embedded_ones() {
        let opts = RunOptions {
            args: vec!["two words".into()],
            ..RunOptions::default()
        };
        assert!(qemu_command(&built(Board::QemuVirt), &opts).is_err());
    }
}
