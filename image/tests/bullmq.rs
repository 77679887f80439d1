//! kvstore under a real application: BullMQ, the Node.js job queue, from
//! the npm registry (installed into `image/bullmq/node_modules` by
//! `image/host-tools.sh` `need_bullmq`, at the versions
//! `image/bullmq/package-lock.json` pins). `image/bullmq/jobs.js` adds 1,000
//! jobs to a queue, processes them with two workers, makes every 10th job
//! fail its first attempt so that BullMQ retries it, and checks that every
//! job completed exactly once, that the retried ones took two attempts and
//! that the queue counts 1,000 completed and none failed, that a
//! `QueueEvents` reader saw every completion and retry, and that the queue
//! finds both workers. BullMQ drives kvstore through its Lua scripts
//! (EVALSHA, with cmsgpack and cjson), BZPOPMIN on its marker key, streams
//! for its events (XADD, XTRIM, XREAD BLOCK), CLIENT SETNAME and LIST for
//! its workers, and INFO for the server's version. The run takes about 5 s
//! once the image is built.

mod common;

use common::kvstore::{client_output, fresh_disk, need_host_tools, Guest};
use faultline_image::workspace_root;
use std::process::Command;
use std::time::Instant;

#[test]
fn bullmq_processes_a_thousand_jobs_with_retries_on_kvstore() {
    let root = workspace_root();
    // Installs Node.js and the packages when missing.
    need_host_tools(
        "need_bullmq",
        "installing Node.js or image/bullmq's packages (npm ci) failed",
    );
    fresh_disk("kvstore-bullmq");
    let guest = Guest::start("kvstore-bullmq");
    drop(guest.connect());
    let started = Instant::now();
    let stdout = client_output(
        &guest,
        Command::new("node")
            .arg(root.join("image/bullmq/jobs.js"))
            .arg(guest.port.to_string())
            .current_dir(root.join("image/bullmq")),
        "the BullMQ program",
    );
    println!("the BullMQ program ran {:?}", started.elapsed());
    for part in [
        "bullmq: 1000 jobs completed once each",
        "100 retried after a failure (attemptsMade 2)",
        "counts completed 1000 failed 0",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
}
