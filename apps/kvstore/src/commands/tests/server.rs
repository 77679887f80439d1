use super::*;

fn text(reply: Reply) -> String {
    match reply {
        Reply::Bulk(Some(bytes)) | Reply::Verbatim(bytes) => String::from_utf8(bytes).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

#[test]
fn ping_and_echo() {
    transcript(
        r#"
        > PING
        PONG
        > ping hi
        "hi"
        > PING a b
        (error) ERR wrong number of arguments for 'ping' command
        > ECHO "hello world"
        "hello world"
        > ECHO
        (error) ERR wrong number of arguments for 'echo' command
    "#,
    );
}

#[test]
fn unknown_commands() {
    let mut s = Session::new();
    // Each error ends in a space: pairs, not a transcript, keep it seen.
    s.expect(&[
        (
            "foo a b",
            err("ERR unknown command 'foo', with args beginning with: 'a' 'b' "),
        ),
        (
            "FOO",
            err("ERR unknown command 'FOO', with args beginning with: "),
        ),
    ]);
    let long = "x".repeat(200);
    let Reply::Error(text) = s.run(&format!("nope {long} more")) else {
        panic!()
    };
    assert!(
        text.ends_with(&format!("'{}' ", "x".repeat(128))),
        "arguments cut at 128 bytes"
    );
}

#[test]
fn wrong_argument_counts_name_the_command() {
    let mut s = Session::new();
    for (line, name) in [
        ("GET", "get"),
        ("GET a b", "get"),
        ("del", "del"),
        ("INCRBY k", "incrby"),
        ("DBSIZE x", "dbsize"),
        ("CONFIG", "config"),
        ("CONFIG GET", "config|get"),
        ("CLIENT SETNAME", "client|setname"),
    ] {
        assert_eq!(
            s.run(line),
            err(&format!(
                "ERR wrong number of arguments for '{name}' command"
            )),
            "{line}"
        );
    }
}

#[test]
fn select_takes_the_configured_databases() {
    transcript(
        r#"
        > SELECT 0
        OK
        > SELECT 15
        OK
        > SELECT 16
        (error) ERR DB index is out of range
        > SELECT -1
        (error) ERR DB index is out of range
        > SELECT x
        (error) ERR value is not an integer or out of range
        // Found by the differential test against redis-server: an integer
        // beyond 32 bits has an error of its own.
        > SELECT 99999999999
        (error) ERR value is out of range, value must between -2147483648 and 2147483647
    "#,
    );
}

#[test]
fn quit_asks_the_server_to_close() {
    let mut s = Session::new();
    assert!(!s.client.should_close());
    assert_eq!(s.run("QUIT"), ok());
    assert!(s.client.should_close());
}

#[test]
fn client_names() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CLIENT GETNAME
        (nil)
        > CLIENT SETNAME worker-1
        OK
        > client getname
        "worker-1"
    "#,
    );
    assert_eq!(s.client.name(), Some(&b"worker-1"[..]));
    s.transcript(
        r#"
        > CLIENT SETNAME "a b"
        (error) ERR Client names cannot contain spaces, newlines or special characters.
        > CLIENT SETNAME ""
        OK
        // empty name clears it
        > CLIENT GETNAME
        (nil)
        > CLIENT ID
        (integer) 7
        > CLIENT SETINFO LIB-NAME redis-py
        OK
        > CLIENT FROBNICATE x
        (error) ERR unknown subcommand 'FROBNICATE'. Try CLIENT HELP.
        > CLIENT KILL 10.0.0.9:1
        (error) ERR No such client
    "#,
    );
}

#[test]
fn command_introspection() {
    let mut s = Session::new();
    let Reply::Integer(count) = s.run("COMMAND COUNT") else {
        panic!()
    };
    let Reply::Array(Some(all)) = s.run("COMMAND") else {
        panic!()
    };
    assert_eq!(all.len() as i64, count);
    let Reply::Array(Some(info)) = s.run("COMMAND INFO get nosuch") else {
        panic!()
    };
    let Reply::Array(Some(get)) = &info[0] else {
        panic!()
    };
    assert_eq!(get[0], bulk("get"));
    assert_eq!(get[1], int(2));
    assert_eq!(
        get[2],
        array(&[
            Reply::Simple("readonly".into()),
            Reply::Simple("fast".into())
        ])
    );
    assert_eq!(&get[3..6], &[int(1), int(1), int(1)]);
    assert_eq!(info[1], Reply::Array(None));
    assert_eq!(s.run("COMMAND DOCS"), array(&[]));
    assert!(sorted(s.run("COMMAND LIST")).contains(&String::from("set")));
    assert_eq!(
        s.run("COMMAND BOGUS"),
        err("ERR unknown subcommand 'BOGUS'. Try COMMAND HELP.")
    );
}

#[test]
fn command_getkeys_names_the_keys_a_command_would_touch() {
    transcript(
        r#"
        > COMMAND GETKEYS get key
        1) "key"
        > COMMAND GETKEYS mset a 1 b 2
        1) "a"
        2) "b"
        > COMMAND GETKEYS lcs key1 key2
        1) "key1"
        2) "key2"
        > COMMAND GETKEYS zunionstore target 2 a b WEIGHTS 1 2
        1) "target"
        2) "a"
        3) "b"
        > COMMAND GETKEYS sort abc store invalid store stillbad store def
        1) "abc"
        2) "def"
        > COMMAND GETKEYS object encoding k
        1) "k"
        > COMMAND GETKEYS nosuch k
        (error) ERR Invalid command specified
        > COMMAND GETKEYS ping
        (error) ERR The command has no key arguments
        > COMMAND GETKEYS get
        (error) ERR Invalid number of arguments specified for command
        > COMMAND GETKEYS zunion 5 a b
        (error) ERR Invalid arguments specified for command
        > COMMAND GETKEYS
        (error) ERR wrong number of arguments for 'command|getkeys' command
    "#,
    );
}

#[test]
fn config_get_for_benchmarks() {
    transcript(
        r#"
        > CONFIG GET save
        1) "save"
        2) ""
        > CONFIG GET appendonly
        1) "appendonly"
        2) "no"
        > config get MAXMEMORY
        1) "maxmemory"
        2) "0"
        > CONFIG GET nonexistent
        (empty array)
        // several patterns, no duplicates
        > CONFIG GET maxmemory maxmemory*
        1) "maxmemory"
        2) "0"
        3) "maxmemory-policy"
        4) "noeviction"
        5) "maxmemory-samples"
        6) "5"
        > CONFIG FOO
        (error) ERR unknown subcommand 'FOO'. Try CONFIG HELP.
    "#,
    );
}

#[test]
fn config_set_is_all_or_nothing() {
    let mut s = Session::new();
    assert_eq!(s.run("CONFIG SET maxmemory 1mb"), ok());
    assert_eq!(s.engine.config().maxmemory, 1 << 20);
    assert_eq!(
        s.run("CONFIG SET maxmemory 2mb appendfsync sometimes"),
        err("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no")
    );
    assert_eq!(s.engine.config().maxmemory, 1 << 20, "nothing applied");
    s.transcript(r#"
        // a name without its value (found by the differential test)
        > CONFIG SET maxmemory 2mb maxclients
        (error) ERR syntax error
        // Names are checked before values, and named as typed (found by the
        // differential test).
        > CONFIG SET maxclients lots NoSuch 1
        (error) ERR Unknown option or number of arguments for CONFIG SET - 'NoSuch'
        > CONFIG SET maxclients lots databases 3
        (error) ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config
        > CONFIG SET maxclients 10 MaxClients 20
        (error) ERR CONFIG SET failed (possibly related to argument 'MaxClients') - duplicate parameter
        > CONFIG SET MAXCLIENTS lots
        (error) ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer
        > CONFIG SET appendonly yes
        (error) ERR CONFIG SET failed (possibly related to argument 'appendonly') - can't set immutable config
    "#);
}

/// Clients turn features on by the version: kvstore implements Redis
/// 7.0's commands and replies, so every place says 7.0.
#[test]
fn the_version_reported_everywhere_is_redis_7_0() {
    let mut s = Session::new();
    let info = text(s.run("INFO server"));
    assert!(info.contains("\r\nredis_version:7.0."), "{info}");
    let hello = s.run("HELLO").into_items().unwrap();
    assert_eq!(hello[2], Reply::bulk("version"));
    let Reply::Bulk(Some(version)) = &hello[3] else {
        panic!("{hello:?}")
    };
    assert!(version.starts_with(b"7.0."), "{hello:?}");
}

#[test]
fn info_sections() {
    let mut s = Session::new();
    s.engine.stats_mut().connected_clients = 3;
    s.run("SET k v EX 100");
    s.run("GET k");
    s.run("GET missing");
    s.advance(5_000);
    let all = text(s.run("INFO"));
    for needle in [
        "# Server\r\n",
        "redis_version:7.",
        "uptime_in_seconds:5\r\n",
        "# Clients\r\nconnected_clients:3\r\n",
        "# Memory\r\nused_memory:",
        "maxmemory_policy:noeviction\r\n",
        "# Persistence\r\n",
        "aof_enabled:0\r\n",
        "# Stats\r\n",
        "total_commands_processed:3\r\n",
        "keyspace_hits:1\r\n",
        "keyspace_misses:1\r\n",
        "# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=0\r\n",
    ] {
        assert!(all.contains(needle), "missing {needle:?} in\n{all}");
    }
    let memory = text(s.run("INFO memory"));
    assert!(memory.starts_with("# Memory\r\n"));
    assert!(!memory.contains("# Server"));
    let two = text(s.run("INFO SERVER stats"));
    assert!(two.contains("# Server") && two.contains("# Stats") && !two.contains("# Memory"));
    assert_eq!(text(s.run("INFO nosuchsection")), "");
}

#[test]
fn resetstat_zeroes_counters() {
    let mut s = Session::after("GET missing");
    assert_eq!(s.run("CONFIG RESETSTAT"), ok());
    assert_eq!(s.engine.stats().keyspace_misses, 0);
}

#[test]
fn info_commandstats_counts_calls_refusals_and_failures() {
    let mut s = Session::new();
    s.run("SET k v");
    s.run("GET k");
    s.run("GET k");
    s.run("GET");
    s.run("INCR k");
    s.run("CONFIG SET maxmemory 1");
    s.run("SET x 1");
    s.run("nosuchcommand");
    let stats = text(s.run("INFO commandstats"));
    let line = |name: &str| {
        stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no cmdstat_{name} in {stats}"))
            .to_string()
    };
    assert!(stats.starts_with("# Commandstats\r\n"), "{stats}");
    assert!(
        line("get").contains("calls=2,")
            && line("get").ends_with("rejected_calls=1,failed_calls=0")
    );
    assert!(
        line("incr").ends_with("rejected_calls=0,failed_calls=1"),
        "not an integer"
    );
    assert!(
        line("set").contains("calls=1,")
            && line("set").ends_with("rejected_calls=1,failed_calls=0"),
        "OOM"
    );
    assert!(line("config|set").contains("calls=1,"));
    assert!(!stats.contains("nosuchcommand"));
    s.run("CONFIG RESETSTAT");
    assert_eq!(
        text(s.run("INFO commandstats")),
        "# Commandstats\r\ncmdstat_config|resetstat:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"
    );
}

#[test]
fn info_sections_default_all_and_named() {
    let mut s = Session::after("PING");
    let default = text(s.run("INFO"));
    assert!(default.contains("# Replication\r\nrole:master\r\n"));
    assert!(default.contains("master_repl_offset:0\r\n"));
    assert!(
        !default.contains("# Commandstats"),
        "not in the default report"
    );
    let headers = |report: &str| -> Vec<String> {
        report
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(String::from)
            .collect()
    };
    assert_eq!(headers(&default), headers(&text(s.run("INFO default"))));
    assert_eq!(
        headers(&default),
        [
            "# Server",
            "# Clients",
            "# Memory",
            "# Persistence",
            "# Stats",
            "# Replication",
            "# CPU",
            "# Errorstats",
            "# Cluster",
            "# Keyspace"
        ]
    );
    let all = text(s.run("INFO all"));
    assert!(all.contains("# Commandstats\r\ncmdstat_info:calls=2,"));
    assert!(all.contains("used_memory:"));
    let two = text(s.run("INFO CPU commandSTATS"));
    assert!(
        two.starts_with("# CPU\r\n")
            && two.contains("cmdstat_ping:")
            && !two.contains("used_memory")
    );
    let once = text(s.run("INFO cpu all"));
    assert_eq!(
        once.matches("used_cpu_user_children").count(),
        1,
        "each section once"
    );
}

#[test]
fn slowlog_keeps_the_newest_slow_commands_as_they_were_sent() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SLOWLOG LEN
        (integer) 0
        > CONFIG SET slowlog-log-slower-than 0
        OK
        > CONFIG SET slowlog-max-len 3
        OK
        > SLOWLOG RESET
        OK
        > SET key test
        OK
        > SADD set a b c
        (integer) 3
        > INCR num
        (integer) 1
        > LPUSH list a
        (integer) 1
        > SLOWLOG LEN
        (integer) 3
        > SLOWLOG GET -2
        (error) ERR count should be greater than or equal to -1
    "#,
    );
    // Newest first, failed commands too; three of them.
    let Reply::Array(Some(all)) = s.run("SLOWLOG GET -1") else {
        panic!("not an array");
    };
    let commands: Vec<Reply> = all
        .iter()
        .map(|entry| match entry {
            Reply::Array(Some(fields)) => fields[3].clone(),
            other => panic!("not an entry: {other:?}"),
        })
        .collect();
    let expected = [
        bulks(&["SLOWLOG", "GET", "-2"]),
        bulks(&["SLOWLOG", "LEN"]),
        bulks(&["LPUSH", "list", "a"]),
    ];
    assert_eq!(commands, expected);
    // A write's value is logged though SET keeps it without a copy.
    s.transcript(
        r#"
        > SLOWLOG RESET
        OK
        > SET k v
        OK
    "#,
    );
    let Reply::Array(Some(newest)) = s.run("SLOWLOG GET 1") else {
        panic!("not an array");
    };
    assert!(matches!(&newest[0], Reply::Array(Some(f)) if f[3] == bulks(&["SET", "k", "v"])));
    s.transcript(
        r#"
        > CONFIG SET slowlog-log-slower-than -1
        OK
        > SLOWLOG RESET
        OK
        > PING
        PONG
        > SLOWLOG LEN
        (integer) 0
    "#,
    );
}

#[test]
fn lastsave_and_role_describe_a_lone_primary_without_snapshots() {
    let mut s = Session::new();
    let Reply::Integer(start) = s.run("LASTSAVE") else {
        panic!("LASTSAVE is not an integer");
    };
    s.run("SET k v");
    s.expect(&[
        ("LASTSAVE", int(start)),
        ("ROLE", array(&[bulk("master"), int(0), array(&[])])),
    ]);
}

#[test]
fn monitor_shows_commands_scripts_and_transactions_in_the_order_they_run() {
    let mut e = Engine::new(Config::default(), 0);
    let (mut watcher, mut client) = (ClientCtx::new(1), ClientCtx::new(2));
    e.client_connected(2, "10.0.2.2:41000".into(), 0);
    let run = |e: &mut Engine, c: &mut ClientCtx, line: &str| {
        let args: Vec<Vec<u8>> = line.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        e.execute(&args, c, 1_700_000_000_123).reply
    };
    assert_eq!(run(&mut e, &mut watcher, "MONITOR"), ok());
    run(&mut e, &mut client, "set foo bar");
    run(&mut e, &mut client, "eval redis.call('incr','n') 0");
    run(&mut e, &mut client, "multi");
    run(&mut e, &mut client, "get foo");
    run(&mut e, &mut client, "exec");
    run(&mut e, &mut client, "CONFIG GET maxmemory");
    run(&mut e, &mut client, "AUTH secret");
    let lines: Vec<String> = e
        .take_messages()
        .into_iter()
        .map(|(to, line)| {
            assert_eq!(to, 1, "only the monitor receives lines");
            String::from_utf8(line).unwrap()
        })
        .collect();
    let at = "+1700000000.123000 [0 10.0.2.2:41000]";
    assert_eq!(
        lines,
        [
            alloc::format!("{at} \"set\" \"foo\" \"bar\"\r\n"),
            alloc::format!("{at} \"eval\" \"redis.call('incr','n')\" \"0\"\r\n"),
            "+1700000000.123000 [0 lua] \"incr\" \"n\"\r\n".into(),
            alloc::format!("{at} \"multi\"\r\n"),
            alloc::format!("{at} \"get\" \"foo\"\r\n"),
            alloc::format!("{at} \"exec\"\r\n"),
            // CONFIG is an admin command: not shown.
            alloc::format!("{at} \"AUTH\" \"(redacted)\"\r\n"),
        ]
    );
    // RESET ends monitoring.
    run(&mut e, &mut watcher, "RESET");
    run(&mut e, &mut client, "PING");
    assert!(e.take_messages().is_empty());
}

#[test]
fn latency_histograms_count_each_commands_runs_by_powers_of_two() {
    transcript(
        r#"
        > CONFIG RESETSTAT
        OK
        > SET a b
        OK
        > SET c d
        OK
        > CLIENT ID
        (integer) 7
        // The engine's clock stands still in tests: every run takes 0 µs.
        > LATENCY HISTOGRAM set nosuch client
        1) "client|id"
        2) 1) "calls"
           2) (integer) 1
           3) "histogram_usec"
           4) 1) (integer) 1
              2) (integer) 1
        3) "set"
        4) 1) "calls"
           2) (integer) 2
           3) "histogram_usec"
           4) 1) (integer) 1
              2) (integer) 2
        > LATENCY HISTOGRAM blabla
        (empty array)
        > LATENCY HISTOGRAM CLIENT|ID
        1) "client|id"
        2) 1) "calls"
           2) (integer) 1
           3) "histogram_usec"
           4) 1) (integer) 1
              2) (integer) 1
        > CONFIG SET latency-tracking no
        OK
        > CONFIG RESETSTAT
        OK
        > GET a
        "b"
        > LATENCY HISTOGRAM get
        (empty array)
        > LATENCY HELP xxx
        (error) ERR wrong number of arguments for 'latency|help' command
    "#,
    );
}

#[test]
fn info_latencystats_shows_the_percentiles_asked_for() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG RESETSTAT
        OK
        > SET k v
        OK
        > CONFIG GET latency-tracking-info-percentiles
        1) "latency-tracking-info-percentiles"
        2) "50 99 99.9"
    "#,
    );
    let stats = text(s.run("INFO latencystats"));
    assert!(stats.starts_with("# Latencystats\r\n"), "{stats}");
    assert!(stats.contains("latency_percentiles_usec_set:p50=0.000,p99=0.000,p99.9=0.000\r\n"));
    s.transcript(r#"
        > CONFIG SET latency-tracking-info-percentiles "0.0 50.0 100.0"
        OK
        > CONFIG GET latency-tracking-info-percentiles
        1) "latency-tracking-info-percentiles"
        2) "0 50 100"
        > CONFIG SET latency-tracking-info-percentiles "10.0 50.0 a"
        (error) ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - Invalid latency-tracking-info-percentiles parameters
        > CONFIG SET latency-tracking-info-percentiles "10.0 50.0 101.0"
        (error) ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - latency-tracking-info-percentiles parameters should sit between [0.0,100.0]
        > CONFIG SET latency-monitor-threshold -1
        (error) ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - argument must be between 0 and 9223372036854775807 inclusive
    "#);
    let stats = text(s.run("INFO latencystats"));
    assert!(stats.contains("latency_percentiles_usec_set:p0=0.000,p50=0.000,p100=0.000\r\n"));
    assert!(
        !text(s.run("INFO")).contains("Latencystats"),
        "not a default section"
    );
    s.run("CONFIG RESETSTAT");
    assert!(!text(s.run("INFO latencystats")).contains("_set:"));
}

#[test]
fn the_latency_monitor_records_commands_over_the_threshold() {
    let mut s = Session::new();
    // A clock that moves 5 ms each time it is read: every command takes 5 ms.
    fn slow_clock() -> u64 {
        use core::sync::atomic::{AtomicU64, Ordering};
        static NOW: AtomicU64 = AtomicU64::new(0);
        NOW.fetch_add(5_000, Ordering::Relaxed)
    }
    s.engine.set_clock_us(slow_clock);
    s.transcript(
        r#"
        > LATENCY LATEST
        (empty array)
        > SET k v
        OK
        > LATENCY LATEST
        (empty array)
        > CONFIG SET latency-monitor-threshold 5
        OK
        > SET k v
        OK
        > GET k
        "v"
        > LATENCY RESET nosuch
        (integer) 0
        > LATENCY GRAPH nosuch
        (error) ERR No samples available for event 'nosuch'
    "#,
    );
    let Reply::Array(Some(latest)) = s.run("LATENCY LATEST") else {
        panic!("not an array");
    };
    let names: Vec<Reply> = latest
        .iter()
        .map(|event| match event {
            Reply::Array(Some(fields)) => {
                assert_eq!(fields[2], int(5), "5 ms");
                assert_eq!(fields[3], int(5), "highest 5 ms");
                fields[0].clone()
            }
            other => panic!("not an event: {other:?}"),
        })
        .collect();
    // GET is a fast command, SET is not (and CONFIG SET ran under the
    // threshold still).
    assert_eq!(names, [bulk("command"), bulk("fast-command")]);
    let Reply::Array(Some(history)) = s.run("LATENCY HISTORY fast-command") else {
        panic!("not an array");
    };
    assert_eq!(history.len(), 1);
    assert!(text(s.run("LATENCY GRAPH fast-command")).starts_with("fast-command - high 5 ms"));
    assert!(text(s.run("LATENCY DOCTOR")).contains("fast-command: "));
    s.transcript(
        r#"
        > LATENCY RESET
        (integer) 2
        > LATENCY RESET
        (integer) 1
    "#,
    );
}

#[test]
fn transactions_are_counted_as_redis_counts_them() {
    let mut s = Session::after("CONFIG RESETSTAT");
    for line in [
        "MULTI", "SET a b", "AUTH a", "EXEC", "EXEC", "MULTI", "SET", "EXEC",
    ] {
        s.run(line);
    }
    // As redis-server 7.0.15 counts the same requests: the error inside
    // EXEC's reply counts, and MULTI and EXEC are commands like the others.
    let stats = text(s.run("INFO commandstats"));
    let line = |name: &str| {
        let prefix = alloc::format!("cmdstat_{name}:");
        let found = stats.lines().find(|l| l.starts_with(&prefix)).unwrap_or("");
        let counters = found.split(',').filter(|f| !f.starts_with("usec"));
        counters.collect::<Vec<_>>().join(",")
    };
    assert_eq!(
        line("set"),
        "cmdstat_set:calls=1,rejected_calls=1,failed_calls=0"
    );
    assert_eq!(
        line("exec"),
        "cmdstat_exec:calls=3,rejected_calls=0,failed_calls=2"
    );
    assert_eq!(
        line("auth"),
        "cmdstat_auth:calls=1,rejected_calls=0,failed_calls=1"
    );
    assert_eq!(
        line("multi"),
        "cmdstat_multi:calls=2,rejected_calls=0,failed_calls=0"
    );
    let errors = text(s.run("INFO errorstats"));
    assert!(errors.contains("errorstat_ERR:count=3\r\nerrorstat_EXECABORT:count=1\r\n"));
}

#[test]
fn client_kill_checks_its_filters_as_redis_does() {
    transcript(
        r#"
        > CLIENT KILL TYPE wrong_type
        (error) ERR Unknown client type 'wrong_type'
        > CLIENT KILL USER wrong_user
        (error) ERR No such user 'wrong_user'
        > CLIENT KILL SKIPME yes_or_no
        (error) ERR syntax error
        > CLIENT KILL ID str
        (error) ERR client-id should be greater than 0
        > CLIENT KILL LADDR 1.2.3.4:5
        (integer) 0
        > CLIENT KILL TYPE replica
        (integer) 0
        > CLIENT KILL USER default
        (integer) 0
    "#,
    );
}
