//! Publish/subscribe between two clients of one engine.

use alloc::vec;

use super::Session;
use crate::commands::ClientCtx;
use crate::resp::Reply;

fn bulk(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

fn confirm(kind: &str, name: &str, n: i64) -> Reply {
    Reply::array(vec![bulk(kind), bulk(name), Reply::Integer(n)])
}

/// Runs `line` as `client` on `s`'s engine.
fn as_client(s: &mut Session, client: &mut ClientCtx, line: &str) -> Reply {
    s.exec_as(client, line).reply
}

#[test]
fn a_subscriber_gets_what_is_published_and_nothing_is_logged() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(20);
    assert_eq!(
        as_client(&mut s, &mut sub, "SUBSCRIBE news sport"),
        Reply::Sequence(vec![
            confirm("subscribe", "news", 1),
            confirm("subscribe", "sport", 2)
        ])
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PSUBSCRIBE n*"),
        Reply::Sequence(vec![confirm("psubscribe", "n*", 3)])
    );
    let published = s.exec("PUBLISH news hello");
    assert_eq!(published.reply, Reply::Integer(2), "channel + pattern");
    assert!(published.effects.is_empty(), "messages are not data");
    let messages = s.engine.take_messages();
    assert_eq!(messages.len(), 2);
    assert!(messages.iter().all(|(id, _)| *id == 20));
    assert_eq!(
        messages[0].1,
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
    s.transcript(
        r#"
        > PUBLISH weather rain
        (integer) 0
        > PUBSUB NUMSUB news nobody
        1) "news"
        2) (integer) 1
        3) "nobody"
        4) (integer) 0
        > PUBSUB NUMPAT
        (integer) 1
        > PUBSUB CHANNELS s*
        1) "sport"
    "#,
    );
}

#[test]
fn a_subscribed_client_may_only_ping_and_manage_subscriptions() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(21);
    as_client(&mut s, &mut sub, "SUBSCRIBE a");
    let refused = as_client(&mut s, &mut sub, "GET k");
    assert_eq!(
        refused,
        Reply::error(
            "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        )
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PING"),
        Reply::array(vec![bulk("pong"), bulk("")])
    );
    // Unsubscribing from everything ends the mode.
    assert_eq!(
        as_client(&mut s, &mut sub, "UNSUBSCRIBE"),
        Reply::Sequence(vec![confirm("unsubscribe", "a", 0)])
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PING"),
        Reply::Simple("PONG".into())
    );
    assert_eq!(
        as_client(&mut s, &mut sub, "PUNSUBSCRIBE"),
        Reply::array(vec![bulk("punsubscribe"), Reply::nil(), Reply::Integer(0)])
    );
}

#[test]
fn a_client_that_leaves_receives_nothing_more() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(22);
    as_client(&mut s, &mut sub, "SUBSCRIBE a");
    s.engine.client_gone(22);
    assert_eq!(s.run("PUBLISH a x"), Reply::Integer(0));
    assert!(s.engine.take_messages().is_empty());
    assert_eq!(s.run("PUBSUB CHANNELS"), Reply::array(vec![]));
}

#[test]
fn reset_leaves_a_fresh_connection() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(23);
    as_client(&mut s, &mut c, "SELECT 3");
    as_client(&mut s, &mut c, "CLIENT SETNAME me");
    as_client(&mut s, &mut c, "SUBSCRIBE a");
    assert_eq!(
        as_client(&mut s, &mut c, "RESET"),
        Reply::Simple("RESET".into())
    );
    assert_eq!((c.db(), c.name(), c.subscriptions()), (0, None, 0));
    assert_eq!(s.run("PUBLISH a x"), Reply::Integer(0));
    // Inside a transaction, RESET is not queued: it ends it.
    as_client(&mut s, &mut c, "MULTI");
    assert_eq!(
        as_client(&mut s, &mut c, "RESET"),
        Reply::Simple("RESET".into())
    );
    assert_eq!(
        as_client(&mut s, &mut c, "EXEC"),
        Reply::error("ERR EXEC without MULTI")
    );
}

#[test]
fn client_list_info_kill_and_no_evict_see_every_connection() {
    let mut s = Session::new();
    s.engine.client_connected(7, "10.0.2.2:5000".into(), s.now);
    s.engine.client_connected(30, "10.0.2.2:5001".into(), s.now);
    let mut other = ClientCtx::new(30);
    as_client(&mut s, &mut other, "CLIENT SETNAME worker");
    as_client(&mut s, &mut other, "SUBSCRIBE jobs");
    s.advance(3_000);
    let Reply::Verbatim(list) = s.run("CLIENT LIST") else {
        panic!("CLIENT LIST is verbatim text");
    };
    let list = alloc::string::String::from_utf8(list).unwrap();
    let lines: alloc::vec::Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with("id=7 addr=10.0.2.2:5000 "), "{list}");
    // The request running shows as Redis shows it: its bytes still in the
    // query buffer, its full name.
    assert!(lines[0].contains(" qbuf=26 "), "{list}");
    assert!(lines[0].contains(" cmd=client|list "), "{list}");
    assert!(lines[1].contains("name=worker"), "{list}");
    assert!(
        lines[1].contains("flags=P") && lines[1].contains("sub=1"),
        "{list}"
    );
    assert!(lines[1].contains("age=3 idle=3"), "{list}");
    let Reply::Verbatim(pubsub) = s.run("CLIENT LIST TYPE pubsub") else {
        panic!("bulk");
    };
    assert_eq!(pubsub.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(s.run("CLIENT NO-EVICT on"), Reply::ok());
    let Reply::Verbatim(me) = s.run("CLIENT INFO") else {
        panic!("bulk");
    };
    assert!(me.starts_with(b"id=7 ") && me.windows(8).any(|w| w == b"flags=e "));
    // Killing: itself is skipped by default; the old form names an address.
    s.transcript(
        r#"
        > CLIENT KILL ADDR 10.0.2.2:5000
        (integer) 0
        > CLIENT KILL TYPE pubsub
        (integer) 1
    "#,
    );
    assert_eq!(s.engine.take_kills(), vec![30]);
    s.transcript(
        r#"
        > CLIENT KILL 10.0.2.2:9
        (error) ERR No such client
        > CLIENT KILL 10.0.2.2:5001
        OK
    "#,
    );
    assert_eq!(s.engine.take_kills(), vec![30]);
    s.engine.client_gone(30);
    assert_eq!(s.run("CLIENT KILL ID 30"), Reply::Integer(0));
    // Killing itself: the reply goes out, then the connection closes.
    assert!(!s.client.should_close());
    assert_eq!(s.run("CLIENT KILL ID 7 SKIPME no"), Reply::Integer(1));
    assert!(s.client.should_close());
    assert_eq!(s.engine.take_kills(), Vec::<u64>::new());
}

/// The wire text of `line` run as `client` (RESP2).
fn wire_as(s: &mut Session, client: &mut ClientCtx, line: &str) -> alloc::string::String {
    let reply = as_client(s, client, line);
    alloc::string::String::from_utf8_lossy(&reply.to_bytes()).into_owned()
}

/// The refusal a subscribed RESP2 client gets for `name`.
fn refused(name: &str) -> alloc::string::String {
    alloc::format!("-ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
}

// Expected texts: redis-server 7.0.15, the same commands over a socket.
#[test]
fn shard_channels_are_counted_apart_and_heard_as_smessage() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(24);
    let mut w = |s: &mut Session, line| wire_as(s, &mut sub, line);
    assert_eq!(
        w(&mut s, "SUBSCRIBE a"),
        "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        w(&mut s, "SSUBSCRIBE b c"),
        "*3\r\n$10\r\nssubscribe\r\n$1\r\nb\r\n:1\r\n*3\r\n$10\r\nssubscribe\r\n$1\r\nc\r\n:2\r\n"
    );
    assert_eq!(
        w(&mut s, "PSUBSCRIBE p*"),
        "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:2\r\n"
    );
    assert_eq!(
        w(&mut s, "SSUBSCRIBE b"),
        "*3\r\n$10\r\nssubscribe\r\n$1\r\nb\r\n:2\r\n"
    );
    assert_eq!(
        w(&mut s, "SUBSCRIBE d"),
        "*3\r\n$9\r\nsubscribe\r\n$1\r\nd\r\n:3\r\n"
    );
    assert_eq!(w(&mut s, "SPUBLISH x y"), refused("spublish"));
    assert_eq!(w(&mut s, "PING hi"), "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
    s.transcript(r#"
        > SPUBLISH b hello
        (integer) 1
        > PUBLISH b hello
        (integer) 0
        > PUBSUB SHARDCHANNELS
        1) "b"
        2) "c"
        > PUBSUB SHARDCHANNELS b*
        1) "b"
        > PUBSUB SHARDCHANNELS a b
        (error) ERR unknown subcommand or wrong number of arguments for 'SHARDCHANNELS'. Try PUBSUB HELP.
        > PUBSUB CHANNELS a b
        (error) ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.
        > PUBSUB SHARDNUMSUB b a
        1) "b"
        2) (integer) 1
        3) "a"
        4) (integer) 0
        > PUBSUB SHARDNUMSUB
        (empty array)
        > PUBSUB CHANNELS
        1) "a"
        2) "d"
    "#);
    assert_eq!(
        s.engine.take_messages(),
        vec![(
            24,
            b"*3\r\n$8\r\nsmessage\r\n$1\r\nb\r\n$5\r\nhello\r\n".to_vec()
        )]
    );
    let mut w = |s: &mut Session, line| wire_as(s, &mut sub, line);
    assert_eq!(
        w(&mut s, "SUNSUBSCRIBE b zz"),
        "*3\r\n$12\r\nsunsubscribe\r\n$1\r\nb\r\n:1\r\n*3\r\n$12\r\nsunsubscribe\r\n$2\r\nzz\r\n:1\r\n"
    );
    assert_eq!(
        w(&mut s, "UNSUBSCRIBE d a"),
        "*3\r\n$11\r\nunsubscribe\r\n$1\r\nd\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        w(&mut s, "PUNSUBSCRIBE"),
        "*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n"
    );
    // Still subscribed to a shard channel: still in pub/sub mode.
    assert_eq!(w(&mut s, "PING"), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    assert_eq!(
        w(&mut s, "SUNSUBSCRIBE"),
        "*3\r\n$12\r\nsunsubscribe\r\n$1\r\nc\r\n:0\r\n"
    );
    assert_eq!(
        w(&mut s, "SUNSUBSCRIBE"),
        "*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"
    );
    assert_eq!(w(&mut s, "PING"), "+PONG\r\n");
    assert_eq!(s.run("SPUBLISH c x"), Reply::Integer(0));
}

#[test]
fn the_subscribed_gate_checks_the_command_first_and_names_it_in_full() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(25);
    as_client(&mut s, &mut sub, "SSUBSCRIBE a");
    let mut w = |line| wire_as(&mut s, &mut sub, line);
    assert_eq!(w("CLIENT INFO"), refused("client|info"));
    assert_eq!(w("MULTI"), refused("multi"));
    assert_eq!(
        w("FOO"),
        "-ERR unknown command 'FOO', with args beginning with: \r\n"
    );
    assert_eq!(
        w("GET"),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        w("PING a b"),
        "-ERR wrong number of arguments for 'ping' command\r\n"
    );
    assert_eq!(
        w("CLIENT FOO"),
        "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"
    );
    assert_eq!(
        w("SUBSCRIBE"),
        "-ERR wrong number of arguments for 'subscribe' command\r\n"
    );
}

#[test]
fn ssubscribe_is_refused_in_a_transaction_and_in_scripts() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MULTI
        OK
        > SSUBSCRIBE a
        QUEUED
        > SUBSCRIBE b
        QUEUED
        > SPUBLISH a b
        QUEUED
    "#,
    );
    assert_eq!(
        s.wire("EXEC"),
        "*3\r\n-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:1\r\n:0\r\n"
    );
    as_client(&mut s, &mut ClientCtx::new(26), "SSUBSCRIBE a");
    let mut other = ClientCtx::new(27);
    assert_eq!(
        as_client(
            &mut s,
            &mut other,
            "EVAL \"return redis.call('spublish','a','b')\" 0"
        ),
        Reply::Integer(1)
    );
    for command in ["ssubscribe", "sunsubscribe"] {
        let line = alloc::format!("EVAL \"return redis.call('{command}','a')\" 0");
        let Reply::Error(text) = as_client(&mut s, &mut other, &line) else {
            panic!("{command} runs in a script");
        };
        assert!(
            text.starts_with("ERR This Redis command is not allowed from script"),
            "{text}"
        );
    }
}

#[test]
fn shard_subscribers_in_client_list_kill_and_reset() {
    let mut s = Session::new();
    s.engine.client_connected(7, "10.0.2.2:5000".into(), s.now);
    s.engine.client_connected(31, "10.0.2.2:5001".into(), s.now);
    let mut sub = ClientCtx::new(31);
    as_client(&mut s, &mut sub, "SSUBSCRIBE x y");
    let Reply::Verbatim(list) = s.run("CLIENT LIST TYPE pubsub") else {
        panic!("CLIENT LIST is verbatim text");
    };
    let list = alloc::string::String::from_utf8(list).unwrap();
    assert!(list.starts_with("id=31 "), "{list}");
    assert!(
        list.contains(" flags=P db=0 sub=0 psub=0 ssub=2 multi=-1 "),
        "{list}"
    );
    assert_eq!(s.run("CLIENT KILL TYPE pubsub"), Reply::Integer(1));
    assert_eq!(s.engine.take_kills(), vec![31]);
    assert_eq!(
        as_client(&mut s, &mut sub, "RESET"),
        Reply::Simple("RESET".into())
    );
    assert_eq!(sub.subscriptions(), 0);
    s.transcript(
        r#"
        > SPUBLISH x m
        (integer) 0
        > PUBSUB SHARDCHANNELS
        (empty array)
    "#,
    );
    as_client(&mut s, &mut sub, "SSUBSCRIBE z");
    s.engine.client_gone(31);
    assert_eq!(
        s.run("PUBSUB SHARDNUMSUB z"),
        Reply::array(vec![bulk("z"), Reply::Integer(0)])
    );
}

/// `COMMAND INFO name`'s name, arity, flags, first key, last key, step.
fn command_info(s: &mut Session, name: &str) -> alloc::vec::Vec<Reply> {
    let Reply::Array(Some(mut info)) = s.run(&alloc::format!("COMMAND INFO {name}")) else {
        panic!("COMMAND INFO answers an array");
    };
    let Reply::Array(Some(mut entry)) = info.remove(0) else {
        panic!("{name} is a command");
    };
    entry.truncate(6);
    entry
}

// Expected: redis-server 7.0.15's `COMMAND INFO`, whose key specs place
// the shard channels (as not-keys) for a cluster to route by slot.
#[test]
fn sharded_commands_in_command_info_and_getkeys() {
    let mut s = Session::new();
    let flags =
        |names: &[&str]| Reply::Set(names.iter().map(|&n| Reply::Simple(n.into())).collect());
    let int = Reply::Integer;
    assert_eq!(
        command_info(&mut s, "spublish"),
        vec![
            bulk("spublish"),
            int(3),
            flags(&["loading", "stale", "fast"]),
            int(1),
            int(1),
            int(1)
        ]
    );
    assert_eq!(
        command_info(&mut s, "ssubscribe"),
        vec![
            bulk("ssubscribe"),
            int(-2),
            flags(&["loading", "stale"]),
            int(1),
            int(-1),
            int(1)
        ]
    );
    assert_eq!(
        command_info(&mut s, "sunsubscribe"),
        vec![
            bulk("sunsubscribe"),
            int(-1),
            flags(&["loading", "stale"]),
            int(1),
            int(-1),
            int(1)
        ]
    );
    for line in [
        "COMMAND GETKEYS spublish a b",
        "COMMAND GETKEYS ssubscribe a b",
    ] {
        assert_eq!(
            s.run(line),
            Reply::error("ERR The command has no key arguments")
        );
    }
}
