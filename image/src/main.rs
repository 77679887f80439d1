//! `faultline-image`: build Faultline images and boot them under QEMU.
//!
//! See `faultline-image --help` (or [`faultline_image::cli::USAGE`]) for the commands.

use std::path::Path;
use std::process::ExitCode;

use faultline_image::cli::{self, Cli, Run, USAGE};
use faultline_image::{bootargs, build, check_app, list_apps, workspace_root, Board, RunOptions};

/// Exit status when the run was cut short by `--timeout` (as `timeout(1)` uses).
const EXIT_TIMEOUT: u8 = 124;
/// Exit status for a command line that does not follow the usage.
const EXIT_USAGE: u8 = 2;
/// Exit status for any other failure of the tool itself.
const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    let mut argv = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(s) => argv.push(s),
            Err(bad) => return usage_error(&format!("argument {bad:?} is not UTF-8")),
        }
    }
    let command = match cli::parse(&argv) {
        Ok(c) => c,
        Err(e) => return usage_error(&e.0),
    };
    let root = workspace_root();
    match command {
        Cli::Help => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Cli::List => list(&root),
        Cli::KvCheck { disk, fix } => {
            match faultline_image::kvcheck::kv_check(std::path::Path::new(&disk), fix) {
                Ok(report) => {
                    print!("{}", report.text);
                    match report.clean {
                        true => ExitCode::SUCCESS,
                        false => ExitCode::from(EXIT_FAILURE),
                    }
                }
                Err(e) => failure(&e),
            }
        }
        Cli::Build { app, board, args } => {
            if let Err(code) = check_app_or_usage(&root, &app) {
                return code;
            }
            if let Err(e) = bootargs::command_line(&args) {
                return usage_error(&e.to_string());
            }
            match build(&root, &app, board, &args) {
                Ok(built) => {
                    print!("{}", built.summary(&root));
                    ExitCode::SUCCESS
                }
                Err(e) => failure(&e),
            }
        }
        Cli::Run(run) => run_app(&root, run),
    }
}

/// `run`: builds the app and boots it (a cluster with `--nodes`), and
/// exits as the guest did.
fn run_app(root: &Path, run: Run) -> ExitCode {
    // The key-value store is a server: reachable on 6379 unless told otherwise.
    let app = &run.app;
    let board = run.board;
    let port = run
        .port
        .or((*app == "kvstore").then_some(faultline_image::qemu::GUEST_PORT));
    let opts = RunOptions {
        smp: run.smp,
        el2: run.el2,
        args: run.args.clone(),
        extra: run.qemu_args,
        port,
        forward: Vec::new(),
        rdma: None,
        disk_size: run.disk_size,
        disk_read_only: false,
    };
    if let Some(port) = port {
        eprintln!("faultline: {app} is reachable at 127.0.0.1:{port} (e.g. redis-cli -p {port})");
    }
    if let Err(code) = check_app_or_usage(root, app) {
        return code;
    }
    if let Err(e) = faultline_image::qemu::check_options(board, &opts) {
        return usage_error(&e.to_string());
    }
    let built = match build(root, app, board, &run.args) {
        Ok(b) => b,
        Err(e) => return failure(&e),
    };
    eprint!("{}", built.summary(root));
    if let Some(nodes) = run.nodes {
        let fabric = faultline_image::cluster::FabricOptions {
            loss: run.loss,
            mtu: run.mtu,
            link_bench: run.link_bench,
            linux_peers: run
                .linux_peers
                .into_iter()
                .map(|script| faultline_image::linux_peer::LinuxPeer { script })
                .collect(),
            ..Default::default()
        };
        return run_nodes(root, &built, &opts, nodes, &fabric, run.timeout);
    }
    // SIGINT (Ctrl-C) and SIGTERM ask the guest to stop cleanly
    // (kvstore flushes its log) before QEMU is killed.
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal, asked.clone()) {
            eprintln!("faultline-image: cannot catch signal {signal}: {e}");
        }
    }
    let outcome = if run.uboot {
        faultline_image::uboot::run_uboot(&built, &opts, run.timeout, true)
    } else {
        faultline_image::run::run_stoppable(&built, &opts, run.timeout, true, &asked)
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return failure(&e),
    };
    let ms = outcome.wall.as_millis();
    if outcome.timed_out {
        let limit = run.timeout.map(|t| t.as_secs_f64()).unwrap_or_default();
        eprintln!(
            "faultline: {app} on {board} timed out after {limit} s; QEMU killed \
             after {ms} ms (QEMU wall time)"
        );
        return ExitCode::from(EXIT_TIMEOUT);
    }
    match outcome.status {
        Some(status) => {
            eprintln!(
                "faultline: {app} on {board} exited with status {status} after {ms} ms \
                 (QEMU wall time)"
            );
            // Exit statuses are 0..=255 on the platforms QEMU runs on.
            ExitCode::from(status as u8)
        }
        None => {
            eprintln!("faultline: {app} on {board}: QEMU was killed by a signal after {ms} ms");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// `list`: the apps of the workspace and the boards.
fn list(root: &Path) -> ExitCode {
    match list_apps(root) {
        Ok(apps) => {
            println!("apps:   {}", apps.join(" "));
            println!("boards: {}", Board::names().join(" "));
            ExitCode::SUCCESS
        }
        Err(e) => failure(&e),
    }
}

/// An unknown app is a usage error (status 2), reported with the list of valid apps.
fn check_app_or_usage(root: &Path, app: &str) -> Result<(), ExitCode> {
    match check_app(root, app) {
        Ok(()) => Ok(()),
        Err(e @ faultline_image::Error::UnknownApp { .. }) => Err(usage_error(&e.to_string())),
        Err(e) => Err(failure(&e)),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("faultline-image: {msg}\n\n{USAGE}");
    ExitCode::from(EXIT_USAGE)
}

fn failure(e: &faultline_image::Error) -> ExitCode {
    eprintln!("faultline-image: error: {e}");
    ExitCode::from(EXIT_FAILURE)
}

/// `run --nodes N`: boots every node and reports each one's end; fails if any failed.
fn run_nodes(
    root: &std::path::Path,
    built: &faultline_image::Built,
    opts: &RunOptions,
    nodes: u16,
    fabric: &faultline_image::cluster::FabricOptions,
    timeout: Option<std::time::Duration>,
) -> ExitCode {
    let outcome = match faultline_image::cluster::run_cluster(
        root, built, opts, nodes, fabric, timeout, true,
    ) {
        Ok(o) => o,
        Err(e) => return failure(&e),
    };
    let mut worst = 0u8;
    for (rank, node) in outcome.nodes.iter().enumerate() {
        let ms = node.wall.as_millis();
        let end = match (node.timed_out, node.status) {
            (true, _) => {
                worst = worst.max(EXIT_TIMEOUT);
                "timed out or was stopped".to_string()
            }
            (false, Some(s)) => {
                if s != 0 {
                    worst = worst.max(s as u8).max(1);
                }
                format!("exited with status {s}")
            }
            (false, None) => {
                worst = worst.max(EXIT_FAILURE);
                "was killed by a signal".to_string()
            }
        };
        eprintln!("faultline: node {rank} {end} after {ms} ms (QEMU wall time)");
    }
    ExitCode::from(worst)
}
