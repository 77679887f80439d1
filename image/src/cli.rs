//! Command-line parsing for the `faultline-image` binary.
//!
//! Kept in the library, apart from `main.rs`, so the grammar has unit tests. Parsing
//! only checks the shape of the command line; whether the app exists is checked later
//! against the workspace.

use std::fmt;
use std::time::Duration;

use crate::board::Board;

/// Usage text, printed by `--help` and after a usage error.
pub const USAGE: &str = "\
usage:
  faultline-image list
      list the apps and boards
  faultline-image build APP [--board BOARD] [-- ARGS...]
      build APP and write target/images/BOARD/APP.{elf,bin,uimg}
  faultline-image run APP [--board BOARD] [--smp N] [--el2] [--timeout SECS]
                          [--qemu-arg ARG]... [--port PORT] [--nodes N [--loss F] [--mtu M] [--link-bench]
                          [--linux-peer SCRIPT]]
                          [--disk-size SIZE] [--uboot] [-- ARGS...]
      build APP, boot it under QEMU and exit with the guest's status
      (124 when the timeout kills it)
  faultline-image kv-check DISK [--fix]
      report what the key-value store's disk image holds and any damage;
      --fix cuts a damaged log at its first bad byte

options:
  --board BOARD    qemu-virt (default) or zcu102
  --smp N          CPUs (qemu-virt: 1-8, default 4; zcu102: always 4)
  --el2            start the CPUs at EL2 (QEMU virtualization=on)
  --timeout SECS   kill QEMU after SECS seconds (fractions allowed)
  --uboot          boot through U-Boot (qemu-virt; Debian's u-boot-qemu) with bootm
  --qemu-arg ARG   pass ARG to QEMU after the standard options (repeatable)
  --port PORT      forward 127.0.0.1:PORT to the guest's 6379 (virtio-net; GEM3 on zcu102)
                   (kvstore gets 6379 by default)
  --nodes N        boot N nodes (qemu-virt), each with an RDMA engine in a
                   network namespace of its own (10.47.0.1, .2, ...), joined
                   by a bridge and speaking RoCEv2; output lines are
                   prefixed [nR]; fails if any node fails or hangs (root)
  --loss F         with --nodes: each engine drops this fraction of its
                   RoCE packets (0 to 0.5), to test retransmission
  --mtu M          with --nodes: the engines' path MTU, RoCE payload bytes per
                   packet (256, 512, 1024, 2048 or 4096; default 1024)
  --link-bench     with --nodes: before booting, measure what the link between
                   nodes 0 and 1 gives by itself (raw UDP throughput with
                   RoCE-sized datagrams, UDP round trip), lines [link]
  --linux-peer SCRIPT  with --nodes: a Debian Linux guest with soft-RoCE
                   (rdma_rxe, rdma-core, perftest) joins the link at
                   10.47.0.100 (the next one .101, ...; repeatable) and runs
                   the shell SCRIPT once rxe0 is up ($PEER: node 0's address,
                   $NODEn, $LINUXn, $SELF: the addresses, $GID: rxe0's IPv4
                   GID index, connect_retry CMD: CMD again while nothing
                   listens); its lines are prefixed [linuxN]; the run fails if
                   a script does; each node's TCP port 18515 reaches its guest
  --disk-size SIZE the NVMe disk beside the image (qemu-virt): created this
                   big (default 1G), or grown to it; never shrunk. SIZE in
                   bytes or with K, M, G, T (powers of 1024), at least 4M
  ARGS             the app's command line: embedded in the image, and given to
                   QEMU with -append on qemu-virt; no whitespace or '\"' inside
";

/// A parsed command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Cli {
    /// Print the usage text.
    Help,
    /// List apps and boards.
    List,
    /// Build an app's images.
    Build {
        /// App to build.
        app: String,
        /// Board to build for.
        board: Board,
        /// The app's command line.
        args: Vec<String>,
    },
    /// Inspect (and with `fix`, repair) a key-value store disk image.
    KvCheck {
        /// The disk image.
        disk: String,
        /// Cut a damaged log at its first bad byte.
        fix: bool,
    },
    /// Build an app and boot it.
    Run(Run),
}

/// What `run` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// App to build and boot.
    pub app: String,
    /// Board to build for and emulate.
    pub board: Board,
    /// CPU count, if given.
    pub smp: Option<u32>,
    /// Start at EL2.
    pub el2: bool,
    /// Time limit for the QEMU run.
    pub timeout: Option<Duration>,
    /// Extra QEMU arguments.
    pub qemu_args: Vec<String>,
    /// Host port forwarded to the guest's 6379 (None: the app's default).
    pub port: Option<u16>,
    /// Nodes to boot (1 without `--nodes`: a plain single run).
    pub nodes: Option<u16>,
    /// Injected fabric loss for multi-node runs.
    pub loss: Option<f64>,
    /// The engines' path MTU (`--mtu`; 1024 when `None`).
    pub mtu: Option<u32>,
    /// Measure the link between nodes 0 and 1 first (`--link-bench`).
    pub link_bench: bool,
    /// The Linux peers' scripts (`--linux-peer`, repeatable).
    pub linux_peers: Vec<String>,
    /// Size of the NVMe disk (`--disk-size`).
    pub disk_size: Option<u64>,
    /// Boot through U-Boot (`--uboot`, see [`crate::uboot`]).
    pub uboot: bool,
    /// The app's command line.
    pub args: Vec<String>,
}

/// A command line that does not follow [`USAGE`]; the CLI prints it with the usage and
/// exits with status 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// `v` read as the `T` that `ok` accepts, or the usage error "`name` wants
/// `what`": one shape for every numeric option.
fn parsed<T: std::str::FromStr>(
    name: &str,
    v: &str,
    what: &str,
    ok: impl Fn(&T) -> bool,
) -> Result<T, UsageError> {
    v.parse::<T>()
        .ok()
        .filter(ok)
        .ok_or_else(|| usage(format!("{name} wants {what}, got `{v}`")))
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[String]) -> Result<Cli, UsageError> {
    let Some((command, rest)) = argv.split_first() else {
        return Err(usage("no command given"));
    };
    match command.as_str() {
        "-h" | "--help" | "help" => Ok(Cli::Help),
        "list" => {
            if rest.iter().any(|a| a == "-h" || a == "--help") {
                Ok(Cli::Help)
            } else if let Some(extra) = rest.first() {
                Err(usage(format!("`list` takes no arguments (got `{extra}`)")))
            } else {
                Ok(Cli::List)
            }
        }
        "build" | "run" => parse_app_command(command == "run", rest),
        "kv-check" => {
            let mut disk = None;
            let mut fix = false;
            for arg in rest {
                match arg.as_str() {
                    "-h" | "--help" => return Ok(Cli::Help),
                    "--fix" => fix = true,
                    _ if arg.starts_with('-') => {
                        return Err(usage(format!("unknown option `{arg}` for `kv-check`")))
                    }
                    _ if disk.is_none() => disk = Some(arg.clone()),
                    _ => return Err(usage(format!("unexpected argument `{arg}`"))),
                }
            }
            let disk = disk.ok_or_else(|| usage("kv-check needs a disk image"))?;
            Ok(Cli::KvCheck { disk, fix })
        }
        other => Err(usage(format!("unknown command `{other}`"))),
    }
}

/// Parses `APP [options] [-- ARGS...]` for `build` (when `run` is false) and `run`.
fn parse_app_command(run: bool, rest: &[String]) -> Result<Cli, UsageError> {
    let mut app = None;
    let mut board = Board::default();
    let mut smp = None;
    let mut el2 = false;
    let mut timeout = None;
    let mut qemu_args = Vec::new();
    let mut port = None;
    let mut nodes = None;
    let mut loss = None;
    let mut mtu = None;
    let mut link_bench = false;
    let mut linux_peers = Vec::new();
    let mut disk_size = None;
    let mut uboot = false;
    let mut args = Vec::new();

    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            args.extend(it.by_ref().cloned());
            break;
        }
        // Accept both `--opt value` and `--opt=value`.
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, UsageError> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match name {
            "-h" | "--help" => return Ok(Cli::Help),
            "--board" => {
                let v = value(name)?;
                board = Board::parse(&v).map_err(|e| usage(e.to_string()))?;
            }
            "--smp" if run => smp = Some(parsed(name, &value(name)?, "a CPU count", |&n| n > 0)?),
            "--el2" if run && inline.is_none() => el2 = true,
            "--uboot" if run && inline.is_none() => uboot = true,
            "--timeout" if run => {
                let v = value(name)?;
                let secs = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| {
                        usage(format!(
                            "--timeout wants a positive number of seconds, got `{v}`"
                        ))
                    })?;
                timeout = Some(secs);
            }
            "--qemu-arg" if run => qemu_args.push(value(name)?),
            "--port" if run => port = Some(parsed(name, &value(name)?, "a TCP port", |&p| p > 0)?),
            "--nodes" if run => {
                nodes = Some(parsed(name, &value(name)?, "a node count", |&n| n > 0)?);
            }
            "--loss" if run => {
                let fraction = |f: &f64| (0.0..=0.5).contains(f);
                loss = Some(parsed(name, &value(name)?, "a fraction 0..0.5", fraction)?);
            }
            "--mtu" if run => {
                let valid = |m: &u32| [256, 512, 1024, 2048, 4096].contains(m);
                mtu = Some(parsed(
                    name,
                    &value(name)?,
                    "256, 512, 1024, 2048 or 4096",
                    valid,
                )?);
            }
            "--link-bench" if run => link_bench = true,
            "--linux-peer" if run => linux_peers.push(value(name)?),
            "--disk-size" if run => {
                let v = value(name)?;
                disk_size = Some(parse_size(&v).filter(|&s| s >= 4 << 20).ok_or_else(|| {
                    usage(format!(
                        "--disk-size wants a size of at least 4M (e.g. 4G), got `{v}`"
                    ))
                })?);
            }
            _ if arg.starts_with('-') => {
                let cmd = if run { "run" } else { "build" };
                return Err(usage(format!("unknown option `{arg}` for `{cmd}`")));
            }
            _ if app.is_none() => app = Some(arg.clone()),
            _ => {
                return Err(usage(format!(
                    "unexpected argument `{arg}` (app arguments go after `--`)"
                )))
            }
        }
    }

    let app = app.ok_or_else(|| usage("no app given"))?;
    if loss.is_some() && nodes.is_none() {
        return Err(usage("--loss needs --nodes"));
    }
    if mtu.is_some() && nodes.is_none() {
        return Err(usage("--mtu needs --nodes"));
    }
    if link_bench && nodes.is_none_or(|n| n < 2) {
        return Err(usage("--link-bench needs --nodes 2 or more"));
    }
    if !linux_peers.is_empty() && nodes.is_none() {
        return Err(usage("--linux-peer needs --nodes"));
    }
    if uboot && (board != Board::QemuVirt || nodes.is_some()) {
        return Err(usage("--uboot boots one qemu-virt node"));
    }
    Ok(if run {
        Cli::Run(Run {
            app,
            board,
            smp,
            el2,
            timeout,
            qemu_args,
            port,
            nodes,
            loss,
            mtu,
            link_bench,
            linux_peers,
            disk_size,
            uboot,
            args,
        })
    } else {
        Cli::Build { app, board, args }
    })
}

/// A size in bytes, or with a K, M, G or T suffix (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let (digits, shift) = match text.char_indices().last()? {
        (i, 'K' | 'k') => (&text[..i], 10),
        (i, 'M' | 'm') => (&text[..i], 20),
        (i, 'G' | 'g') => (&text[..i], 30),
        (i, 'T' | 't') => (&text[..i], 40),
        _ => (text, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_and_loss() {
        match p("run stencil --nodes 2 --loss 0.01 -- 64 64 10").unwrap() {
            Cli::Run(Run {
                nodes, loss, args, ..
            }) => {
                assert_eq!((nodes, loss), (Some(2), Some(0.01)));
                assert_eq!(args, ["64", "64", "10"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(p("run stencil --nodes 0").is_err());
        assert!(p("run stencil --loss 0.01").is_err());
        assert!(p("run stencil --nodes 2 --loss 0.9").is_err());
        match p("run rdmabench --nodes 2 --mtu 4096").unwrap() {
            Cli::Run(run) => assert_eq!(run.mtu, Some(4096)),
            other => panic!("{other:?}"),
        }
        assert!(p("run rdmabench --nodes 2 --mtu 1500").is_err());
        assert!(p("run rdmabench --mtu 4096").is_err());
    }

    fn p(line: &str) -> Result<Cli, UsageError> {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&argv)
    }

    fn err(line: &str) -> String {
        p(line).unwrap_err().0
    }

    #[test]
    fn help_and_list() {
        assert_eq!(p("--help").unwrap(), Cli::Help);
        assert_eq!(p("help").unwrap(), Cli::Help);
        assert_eq!(p("run hello --help").unwrap(), Cli::Help);
        assert_eq!(p("list").unwrap(), Cli::List);
        assert!(err("list x").contains("no arguments"));
        assert!(err("").contains("no command"));
        assert!(err("flash hello").contains("unknown command `flash`"));
    }

    #[test]
    fn build_defaults_and_args() {
        assert_eq!(
            p("build hello").unwrap(),
            Cli::Build {
                app: "hello".into(),
                board: Board::QemuVirt,
                args: vec![],
            }
        );
        assert_eq!(
            p("build --board=zcu102 kv -- --port 7 --smp").unwrap(),
            Cli::Build {
                app: "kv".into(),
                board: Board::Zcu102,
                args: vec!["--port".into(), "7".into(), "--smp".into()],
            }
        );
    }

    #[test]
    fn run_with_every_option() {
        assert_eq!(
            p("run selftest --board zcu102 --smp 4 --el2 --timeout 2.5 --qemu-arg -s --disk-size 4G -- a b")
                .unwrap(),
            Cli::Run(Run {
                app: "selftest".into(),
                board: Board::Zcu102,
                smp: Some(4),
                el2: true,
                timeout: Some(Duration::from_millis(2500)),
                qemu_args: vec!["-s".into()],
                port: None,
                nodes: None,
                loss: None,
                mtu: None,
                link_bench: false,
                linux_peers: Vec::new(),
                disk_size: Some(4 << 30),
                uboot: false,
                args: vec!["a".into(), "b".into()],
            })
        );
    }

    #[test]
    fn usage_errors() {
        assert!(err("build").contains("no app"));
        assert!(err("build --board").contains("--board needs a value"));
        let m = err("build hello --board pi");
        assert!(m.contains("pi") && m.contains("qemu-virt, zcu102"), "{m}");
        // Run-only options are unknown to build.
        assert!(err("build hello --smp 2").contains("unknown option `--smp`"));
        assert!(err("build hello --el2").contains("unknown option"));
        assert!(err("run hello --smp 0").contains("CPU count"));
        assert!(err("run hello --smp x").contains("CPU count"));
        assert!(err("run hello --timeout -1").contains("positive"));
        assert!(err("run hello --timeout nan").contains("positive"));
        assert!(err("run hello --el2=yes").contains("unknown option"));
        assert!(err("run hello extra").contains("after `--`"));
        assert!(err("run kvstore --disk-size 1M").contains("at least 4M"));
        assert!(err("run kvstore --disk-size lots").contains("--disk-size"));
        assert!(err("run kvstore --disk-size 99999999999T").contains("--disk-size"));
        assert!(err("build kvstore --disk-size 4G").contains("unknown option"));
        assert!(err("kv-check").contains("needs a disk image"));
        assert!(err("kv-check a.disk --cut").contains("unknown option"));
    }

    #[test]
    fn uboot_boots_one_qemu_virt_node() {
        match p("run hello --uboot --el2 -- x").unwrap() {
            Cli::Run(Run {
                uboot, el2, args, ..
            }) => assert!(uboot && el2 && args == ["x"]),
            other => panic!("{other:?}"),
        }
        assert!(err("run hello --board zcu102 --uboot").contains("--uboot"));
        assert!(err("run hello --uboot --nodes 2").contains("--uboot"));
        assert!(err("build hello --uboot").contains("unknown option"));
    }

    #[test]
    fn kv_check_and_sizes() {
        assert_eq!(
            p("kv-check target/kv.disk --fix").unwrap(),
            Cli::KvCheck {
                disk: "target/kv.disk".into(),
                fix: true
            }
        );
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("G"), None);
    }
}
