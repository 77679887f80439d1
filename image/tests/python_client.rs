//! kvstore driven by a real client library: the current Python Redis
//! client (redis-py 5 or later, from PyPI into `target/pyenv`, see
//! `image/host-tools.sh` `need_python_redis`), which opens with `HELLO 3`
//! in its default protocol. `image/tests/python/redis_client.py` runs
//! strings, typed replies (maps, sets, doubles), a pipeline, a transaction,
//! pub/sub, a stream consumer group and the client's `Lock` (Lua scripts
//! by EVALSHA, four clients contending) in the default protocol, with
//! `protocol=3` and with `protocol=2`, then client-side caching (RESP3
//! `CLIENT TRACKING` on one of redis-py's connections: a tracked GET
//! invalidated by a change from another connection, and by `FLUSHDB`;
//! redis-py's own cache refuses servers before 7.4), and fails at the
//! first difference.

mod common;

use common::kvstore::{client_output, fresh_disk, need_host_tools, Guest};
use faultline_image::workspace_root;
use std::process::Command;

#[test]
fn the_python_redis_client_works_in_its_default_protocol_resp3_and_resp2() {
    let root = workspace_root();
    // Installs redis-py when missing.
    need_host_tools(
        "need_python_redis",
        "installing redis-py into target/pyenv failed",
    );
    fresh_disk("kvstore-python");
    let guest = Guest::start("kvstore-python");
    drop(guest.connect());
    let stdout = client_output(
        &guest,
        Command::new(root.join("target/pyenv/bin/python"))
            .arg(root.join("image/tests/python/redis_client.py"))
            .arg(guest.port.to_string()),
        "the Python client",
    );
    for part in [
        "default protocol (RESP3): ",
        "protocol=3 (RESP3): ",
        "protocol=2 (RESP2): ",
        "client-side caching (RESP3, CLIENT TRACKING): invalidated on change: ok",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
}
