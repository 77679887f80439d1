//! `COMMAND INFO`, `COMMAND LIST` and `COMMAND GETKEYS`, against what
//! redis-server 7.0.15 answers; and which commands leave a key's last
//! access time alone.

use super::*;

/// Every command's ACL categories as redis-server 7.0.15's `COMMAND INFO`
/// lists them: `name @category ...`, one command a line.
const REDIS_CATEGORIES: &str = include_str!("acl_categories.txt");

/// The simple strings of a set (or array) reply, in order.
fn simples(reply: &Reply) -> Vec<String> {
    let (Reply::Set(items) | Reply::Array(Some(items))) = reply else {
        panic!("not a set: {reply:?}");
    };
    items
        .iter()
        .map(|item| match item {
            Reply::Simple(s) => s.clone(),
            other => panic!("not a simple string: {other:?}"),
        })
        .collect()
}

/// The `COMMAND INFO` entry of one command or subcommand.
fn info(s: &mut Session, name: &str) -> Vec<Reply> {
    let reply = s.run(&format!("COMMAND INFO {name}"));
    let Some(mut entries) = reply.clone().into_items() else {
        panic!("{reply:?}");
    };
    match entries.pop() {
        Some(Reply::Array(Some(entry))) => entry,
        other => panic!("no entry for {name}: {other:?}"),
    }
}

#[test]
fn every_command_has_redis_acl_categories() {
    let mut s = Session::new();
    let mut checked = 0;
    for line in REDIS_CATEGORIES.lines() {
        let mut words = line.split(' ');
        let name = words.next().unwrap();
        let expected: Vec<String> = words.map(String::from).collect();
        let entry = info(&mut s, name);
        assert_eq!(entry[0], bulk(name));
        assert_eq!(simples(&entry[6]), expected, "{name}");
        checked += 1;
    }
    // Every command kvstore has, but CLIENT SETINFO (Redis 7.2's).
    let all = words(s.run("COMMAND LIST"));
    assert_eq!(checked, all.len() - 1);
}

#[test]
fn command_info_names_subcommands_and_flags_movable_keys() {
    let mut s = Session::new();
    let entry = info(&mut s, "CONFIG|GET");
    assert_eq!(entry[0], bulk("config|get"));
    assert_eq!(entry[1], int(-3));
    assert_eq!(simples(&entry[6]), ["@admin", "@slow", "@dangerous"]);
    assert_eq!(
        s.run("COMMAND INFO get|key config|get|key"),
        array(&[Reply::Array(None), Reply::Array(None)])
    );
    for name in MOVABLE {
        assert!(
            simples(&info(&mut s, name)[2]).contains(&"movablekeys".into()),
            "{name}"
        );
    }
    for name in NOT_MOVABLE {
        assert!(
            !simples(&info(&mut s, name)[2]).contains(&"movablekeys".into()),
            "{name}"
        );
    }
    assert_eq!(
        simples(&info(&mut s, "sort")[2]),
        ["write", "denyoom", "movablekeys"]
    );
}

#[test]
fn command_list_filters_by_category_pattern_and_module() {
    let mut s = Session::new();
    let all = words(s.run("COMMAND LIST"));
    assert!(all.contains(&"set".into()) && all.contains(&"client|list".into()));
    s.transcript(
        r#"
        > COMMAND LIST bad_arg
        (error) ERR syntax error
        > COMMAND LIST FILTERBY bad_arg
        (error) ERR syntax error
        > COMMAND LIST FILTERBY bad_arg x
        (error) ERR syntax error
        > COMMAND LIST FILTERBY aclcat a b
        (error) ERR syntax error
        > COMMAND LIST FILTERBY aclcat non_existing_category
        (empty array)
        > COMMAND LIST FILTERBY aclcat @scripting
        (empty array)
        > COMMAND LIST FILTERBY module non_existing_module
        (empty array)
        > COMMAND LIST FILTERBY pattern set
        1) "set"
        > COMMAND LIST FILTERBY pattern CONFIG|GET
        1) "config|get"
        > COMMAND LIST FILTERBY pattern non_exists*
        (empty array)
    "#,
    );
    let list =
        |s: &mut Session, filter: &str| sorted(s.run(&format!("COMMAND LIST FILTERBY {filter}")));
    assert_eq!(
        list(&mut s, "aclcat transaction"),
        ["discard", "exec", "multi", "unwatch", "watch"]
    );
    assert_eq!(
        list(&mut s, "aclcat HYPERLOGLOG"),
        ["pfadd", "pfcount", "pfdebug", "pfmerge", "pfselftest"]
    );
    let scripting = list(&mut s, "aclcat scripting");
    assert!(scripting.contains(&"eval".into()) && scripting.contains(&"script|kill".into()));
    assert!(!scripting.contains(&"set".into()));
    assert_eq!(
        list(&mut s, "pattern config|*re*"),
        ["config|resetstat", "config|rewrite"]
    );
    assert_eq!(
        list(&mut s, "pattern cl*help"),
        ["client|help", "cluster|help"]
    );
    let config = list(&mut s, "pattern config*");
    assert!(config.contains(&"config".into()) && config.contains(&"config|get".into()));
}

#[test]
fn command_getkeys_of_scripts_and_stream_reads() {
    transcript(
        r#"
        > COMMAND GETKEYS eval r 1 key
        1) "key"
        > COMMAND GETKEYS evalsha x 2 a b
        1) "a"
        2) "b"
        > COMMAND GETKEYS eval r 0
        (empty array)
        > COMMAND GETKEYS eval r 2 a
        (empty array)
        > COMMAND GETKEYS fcall f 0
        (empty array)
        > COMMAND GETKEYS xread streams a b 0 0
        1) "a"
        2) "b"
        > COMMAND GETKEYS xread count 2 streams a 0
        1) "a"
        > COMMAND GETKEYS xreadgroup group g c streams a b 0 0
        1) "a"
        2) "b"
        > COMMAND GETKEYS spublish a b
        (error) ERR The command has no key arguments
    "#,
    );
}

#[test]
fn config_rewrite_and_helps() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG REWRITE
        (error) ERR The server is running without a config file
    "#,
    );
    for (command, first) in [
        (
            "CONFIG HELP",
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        ),
        (
            "CLIENT HELP",
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        ),
    ] {
        let reply = s.run(command);
        let Some(lines) = reply.clone().into_items() else {
            panic!("{reply:?}");
        };
        assert_eq!(lines[0], Reply::Simple(first.into()), "{command}");
    }
}

#[test]
fn ttl_type_and_exists_do_not_alter_the_last_access_time() {
    let mut s = Session::after("SET foo bar");
    s.advance(3000);
    for command in [
        "TTL foo",
        "PTTL foo",
        "TYPE foo",
        "EXISTS foo",
        "EXPIRETIME foo",
    ] {
        s.run(command);
    }
    s.transcript(
        r#"
        > OBJECT IDLETIME foo
        (integer) 3
        > TOUCH foo
        (integer) 1
        > OBJECT IDLETIME foo
        (integer) 0
    "#,
    );
    s.advance(3000);
    s.transcript(
        r#"
        > GET foo
        "bar"
        > OBJECT IDLETIME foo
        (integer) 0
    "#,
    );
}

#[test]
fn command_getkeysandflags_says_how_each_key_is_used() {
    transcript(
        r#"
        > COMMAND GETKEYSANDFLAGS set k1 v1
        1) 1) "k1"
           2) 1) OW
              2) update
        > COMMAND GETKEYSANDFLAGS set k1 v1 get
        1) 1) "k1"
           2) 1) RW
              2) access
              3) update
        > COMMAND GETKEYSANDFLAGS mset k1 v1 k2 v2
        1) 1) "k1"
           2) 1) OW
              2) update
        2) 1) "k2"
           2) 1) OW
              2) update
        > COMMAND GETKEYSANDFLAGS LMOVE k1 k2 left right
        1) 1) "k1"
           2) 1) RW
              2) access
              3) delete
        2) 1) "k2"
           2) 1) RW
              2) insert
        > COMMAND GETKEYSANDFLAGS sort k1 store k2
        1) 1) "k1"
           2) 1) RO
              2) access
        2) 1) "k2"
           2) 1) OW
              2) update
        > COMMAND GETKEYSANDFLAGS del a b
        1) 1) "a"
           2) 1) RM
              2) delete
        2) 1) "b"
           2) 1) RM
              2) delete
        > COMMAND GETKEYSANDFLAGS bitfield k get u8 0
        1) 1) "k"
           2) 1) RO
              2) access
        > COMMAND GETKEYSANDFLAGS object encoding k
        1) 1) "k"
           2) 1) RO
        > COMMAND GETKEYSANDFLAGS eval r 1 k
        1) 1) "k"
           2) 1) RW
              2) access
              3) update
        > COMMAND GETKEYSANDFLAGS bitop and d a
        1) 1) "d"
           2) 1) OW
              2) update
        2) 1) "a"
           2) 1) RO
              2) access
        > COMMAND GETKEYSANDFLAGS get k k
        (error) ERR Invalid number of arguments specified for command
        > COMMAND GETKEYSANDFLAGS get
        (error) ERR wrong number of arguments for 'command|getkeysandflags' command
        > COMMAND GETKEYSANDFLAGS ping x
        (error) ERR The command has no key arguments
    "#,
    );
}
