//! ACL users: `ACL SETUSER` and friends, the check every command passes
//! (top level, `MULTI`/`EXEC`, scripts), `ACL LOG`, logins, and users
//! surviving a restart through the append-only log. Expected replies are
//! redis-server 7.0.15's.

use super::*;

fn error(reply: Reply) -> String {
    match reply {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The `commands` field of `ACL GETUSER name`.
fn commands_of(s: &mut Session, name: &str) -> Reply {
    let items = s
        .run(&format!("ACL GETUSER {name}"))
        .into_items()
        .expect("a user");
    items[5].clone()
}

/// The `ACL LOG` entry at `at` (newest first), field by field.
fn log_entry(s: &mut Session, at: usize) -> BTreeMap<String, Reply> {
    let entries = s.run("ACL LOG").into_items().expect("entries");
    let fields = entries[at].clone().into_items().expect("fields");
    fields
        .chunks(2)
        .map(|kv| (words(array(&[kv[0].clone()]))[0].clone(), kv[1].clone()))
        .collect()
}

#[test]
fn users_log_in_with_their_passwords_when_on() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ACL WHOAMI
        "default"
        > ACL SETUSER newuser >passwd1
        OK
        > ACL SETUSER newuser on +acl
        OK
        > AUTH newuser passwd1
        OK
        > ACL WHOAMI
        "newuser"
        > ACL SETUSER newuser >passwd2 <passwd1
        OK
        > AUTH newuser passwd2
        OK
    "#,
    );
    assert!(error(s.run("AUTH newuser passwd1")).starts_with("WRONGPASS"));
    assert!(error(s.run("ACL SETUSER \"a a\"")).contains("Usernames can't contain spaces"));
    s.run("ACL SETUSER off1 >x");
    assert!(error(s.run("AUTH off1 x")).starts_with("WRONGPASS"));
}

#[test]
fn commands_keys_and_channels_are_refused_with_noperm() {
    let mut s = Session::new();
    s.run("ACL SETUSER u on nopass +acl +set +get ~foo:* %R~r:* resetchannels &ch:*");
    s.run("AUTH u x");
    assert_eq!(
        error(s.run("INCR foo:1")),
        "NOPERM this user has no permissions to run the 'incr' command"
    );
    assert_eq!(s.run("SET foo:1 a"), ok());
    let keys = "NOPERM this user has no permissions to access one of the keys used as arguments";
    assert_eq!(error(s.run("SET zap 1")), keys);
    assert_eq!(error(s.run("SET r:1 1")), keys);
    assert_eq!(s.run("GET r:1"), nil());
    s.run("ACL SETUSER u +publish +subscribe");
    assert_eq!(s.run("PUBLISH ch:1 m"), int(0));
    assert_eq!(
        error(s.run("PUBLISH other m")),
        "NOPERM this user has no permissions to access one of the channels used as arguments"
    );
    s.run("ACL SETUSER u +client|id");
    assert!(!s.run("CLIENT ID").is_error());
    assert_eq!(
        error(s.run("CLIENT KILL ID 1")),
        "NOPERM this user has no permissions to run the 'client|kill' command"
    );
    // AUTH needs no permission.
    assert_eq!(s.run("AUTH default x"), ok());
}

#[test]
fn getuser_and_list_describe_users_as_redis() {
    let mut s = Session::after("ACL SETUSER u1 on >abc ~foo* %R~r* %W~w* %RW~rw* &ch* +get");
    let getuser = s.run("ACL GETUSER u1").into_items().unwrap();
    assert_eq!(getuser[1], bulks(&["on"]));
    assert_eq!(
        getuser[3],
        bulks(&["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"])
    );
    assert_eq!(getuser[5], bulk("-@all +get"));
    assert_eq!(getuser[7], bulk("~foo* %R~r* %W~w* ~rw*"));
    assert_eq!(getuser[9], bulk("&ch*"));
    assert_eq!(
        words(s.run("ACL LIST")),
        [
            "user default on nopass ~* &* +@all",
            "user u1 on #ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad ~foo* %R~r* %W~w* ~rw* resetchannels &ch* -@all +get",
        ]
    );
    s.run("ACL SETUSER bob +memory|doctor");
    assert_eq!(commands_of(&mut s, "bob"), bulk("-@all +memory|doctor"));
    s.run("ACL SETUSER bob +memory");
    assert_eq!(commands_of(&mut s, "bob"), bulk("-@all +memory"));
    s.run("ACL SETUSER bob +@all +client|id");
    assert_eq!(commands_of(&mut s, "bob"), bulk("+@all"));
    assert_eq!(s.run("ACL GETUSER nobody"), nil());
    assert_eq!(words(s.run("ACL USERS")), ["bob", "default", "u1"]);
}

#[test]
fn bad_rules_change_nothing() {
    let mut s = Session::after("ACL SETUSER u on +get");
    assert_eq!(
        error(s.run("ACL SETUSER u -get +config|get|appendonly")),
        "ERR Error in ACL SETUSER modifier '+config|get|appendonly': Allowing first-arg of a subcommand is not supported"
    );
    assert_eq!(commands_of(&mut s, "u"), bulk("-@all +get"));
    assert!(error(s.run("ACL SETUSER u +config|asdf"))
        .ends_with("Unknown command or category name in ACL"));
    assert!(error(s.run("ACL SETUSER nu #abc")).contains("exactly 64 characters"));
    assert_eq!(s.run("ACL GETUSER nu"), nil());
    assert_eq!(
        error(s.run("ACL DELUSER default")),
        "ERR The 'default' user cannot be removed"
    );
    assert!(error(s.run("ACL LOAD")).contains("not configured to use an ACL file"));
}

#[test]
fn cat_genpass_and_dryrun() {
    let mut s = Session::new();
    assert!(words(s.run("ACL CAT")).contains(&"keyspace".into()));
    let scripting = words(s.run("ACL CAT scripting"));
    assert!(scripting.contains(&"function|list".into()));
    assert!(!words(s.run("ACL CAT keyspace")).contains(&"set".into()));
    assert_eq!(
        error(s.run("ACL CAT NON_EXISTS")),
        "ERR Unknown category 'NON_EXISTS'"
    );
    let length = |reply: Reply| match reply {
        Reply::Bulk(Some(text)) => text.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!(length(s.run("ACL GENPASS")), 64);
    assert_eq!(length(s.run("ACL GENPASS 5")), 2);
    assert!(error(s.run("ACL GENPASS 5000")).contains("ACL GENPASS argument must be"));
    s.transcript(
        r#"
        > ACL SETUSER u on nopass +get %W~w*
        OK
        > ACL DRYRUN default get x
        OK
        > ACL DRYRUN u set x 1
        "This user has no permissions to run the 'set' command"
        > ACL DRYRUN u get w1
        "This user has no permissions to access the 'w1' key"
        > ACL DRYRUN nouser get x
        (error) ERR User 'nouser' not found
        > ACL DRYRUN u nosuch
        (error) ERR Command 'nosuch' not found
    "#,
    );
}

#[test]
fn refusals_are_logged_by_context() {
    let mut s = Session::new();
    s.run("ACL SETUSER antirez >foo on +set ~object:1234 +eval +multi +exec");
    s.run("AUTH antirez foo");
    for _ in 0..3 {
        s.run("GET foo");
    }
    s.run("SET somekey 1");
    s.run("MULTI");
    assert!(error(s.run("INCR foo")).starts_with("NOPERM"));
    assert!(error(s.run("EXEC")).starts_with("EXECABORT"));
    assert!(error(s.run("EVAL \"redis.call('incr','foo')\" 0"))
        .starts_with("ERR The user executing the script can't run this command or subcommand"));
    s.run("AUTH antirez wrong");
    s.run("AUTH default x");
    let auth = log_entry(&mut s, 0);
    assert_eq!(auth["reason"], bulk("auth"));
    assert_eq!(auth["object"], bulk("AUTH"));
    let lua = log_entry(&mut s, 1);
    assert_eq!(
        (lua["context"].clone(), lua["object"].clone()),
        (bulk("lua"), bulk("incr"))
    );
    let multi = log_entry(&mut s, 2);
    assert_eq!(
        (multi["context"].clone(), multi["object"].clone()),
        (bulk("multi"), bulk("incr"))
    );
    let key = log_entry(&mut s, 3);
    assert_eq!(
        (key["reason"].clone(), key["object"].clone()),
        (bulk("key"), bulk("somekey"))
    );
    let get = log_entry(&mut s, 4);
    assert_eq!(get["count"], int(3));
    assert_eq!(get["username"], bulk("antirez"));
    assert_eq!(s.run("ACL LOG 2").into_items().unwrap().len(), 2);
    s.run("ACL LOG RESET");
    assert_eq!(s.run("ACL LOG"), array(&[]));
}

#[test]
fn rules_changed_after_queueing_are_checked_at_exec() {
    let mut s = Session::new();
    s.run("ACL SETUSER u on nopass +multi +exec +incr ~*");
    s.run("AUTH u x");
    s.run("MULTI");
    assert_eq!(s.run("INCR k"), Reply::Simple("QUEUED".into()));
    let mut admin = ClientCtx::new(99);
    s.exec_as(&mut admin, "ACL SETUSER u -incr");
    let replies = s.run("EXEC").into_items().unwrap();
    assert!(error(replies[0].clone()).starts_with("NOPERM ACLs rules changed between"));
}

#[test]
fn requirepass_is_the_default_users_password() {
    let mut config = Config::default();
    config.set("requirepass", b"pw").unwrap();
    let mut s = Session::with_config(config);
    assert!(error(s.run("PING")).starts_with("NOAUTH"));
    assert_eq!(s.run("AUTH default pw"), ok());
    assert_eq!(s.run("CONFIG SET requirepass other"), ok());
    assert_eq!(s.run("AUTH other"), ok());
    assert!(error(s.run("AUTH pw")).starts_with("WRONGPASS"));
    // Off, the default user lets no new connection in.
    s.run("CONFIG SET requirepass \"\"");
    s.run("ACL SETUSER default off");
    let mut fresh = ClientCtx::new(50);
    assert!(error(s.exec_as(&mut fresh, "PING").reply).starts_with("NOAUTH"));
}

#[test]
fn scripts_check_with_their_callers_user() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ACL SETUSER bob on >123 +@scripting +set ~x*
        OK
        > AUTH bob 123
        OK
        > EVAL "return redis.acl_check_cmd('set','xx',1)" 1 xx
        (integer) 1
        > EVAL "return redis.acl_check_cmd('hset','xx','f',1)" 1 xx
        (nil)
        > EVAL "return redis.acl_check_cmd('set','yy',1)" 0
        (nil)
    "#,
    );
    assert!(
        error(s.run("EVAL \"return redis.acl_check_cmd('invalid-cmd','arg')\" 0"))
            .contains("Invalid command passed to redis.acl_check_cmd()")
    );
}

#[test]
fn users_survive_a_restart_and_a_rewrite() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        ACL SETUSER alice on >pw ~a* +@read
        ACL SETUSER gone on nopass
        ACL DELUSER gone
        SET a1 v
    "#,
    );
    let mut restarted = load(&log, s.now);
    let mut client = ClientCtx::new(3);
    let run = |e: &mut Engine, c: &mut ClientCtx, line: &str| {
        e.execute(&split_args(line.as_bytes()).unwrap(), c, 0).reply
    };
    assert_eq!(run(&mut restarted, &mut client, "AUTH alice pw"), ok());
    assert_eq!(run(&mut restarted, &mut client, "GET a1"), bulk("v"));
    assert!(error(run(&mut restarted, &mut client, "SET a1 x")).starts_with("NOPERM"));
    assert!(run(&mut restarted, &mut client, "ACL DRYRUN gone ping").is_error());
    // Passwords reach the log as hashes only.
    assert!(!log.windows(3).any(|w| w == b">pw"));
    // A rewritten log starts with the users.
    let compact = s.rewrite(10, |_| Effects::default());
    let mut again = load(&compact, s.now);
    let mut client = ClientCtx::new(4);
    assert_eq!(run(&mut again, &mut client, "AUTH alice pw"), ok());
    let mut admin = ClientCtx::new(5);
    assert_eq!(
        words(run(&mut again, &mut admin, "ACL USERS")),
        ["alice", "default"]
    );
}

#[test]
fn selectors_show_in_getuser_and_list() {
    let mut s = Session::new();
    s.run("ACL SETUSER sel on nopass +get ~a* \"(~b* +set)\" (+del %R~c*)");
    let getuser = s.run("ACL GETUSER sel").into_items().unwrap();
    let selectors = getuser[11].clone().into_items().unwrap();
    assert_eq!(selectors.len(), 2);
    let first = selectors[0].clone().into_items().unwrap();
    assert_eq!(first[1], bulk("-@all +set"));
    assert_eq!(first[3], bulk("~b*"));
    assert_eq!(
        words(s.run("ACL LIST"))[1],
        "user sel on nopass ~a* resetchannels -@all +get (~b* resetchannels -@all +set) (%R~c* resetchannels -@all +del)"
    );
    assert_eq!(s.run("ACL DRYRUN sel set b1 x"), ok());
    assert_eq!(
        s.run("ACL DRYRUN sel set a1 x"),
        bulk("This user has no permissions to access the 'a1' key")
    );
}

#[test]
fn the_star_pattern_is_all_keys_or_channels_whatever_came_before() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ACL SETUSER star resetkeys ~k* ~*
        OK
        > ACL SETUSER star ~*
        OK
        > ACL SETUSER star allchannels &*
        OK
    "#,
    );
    assert!(error(s.run("ACL SETUSER star ~k*")).contains("after the * pattern"));
    assert!(error(s.run("ACL SETUSER star %R~*")).contains("after the * pattern"));
    assert!(error(s.run("ACL SETUSER star &x")).contains("after the * pattern"));
    s.transcript(
        r#"
        > ACL LIST
        1) "user default on nopass ~* &* +@all"
        2) "user star off ~* &* -@all"
    "#,
    );
}

#[test]
fn deluser_with_default_among_the_names_removes_none() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ACL SETUSER alice
        OK
    "#,
    );
    assert_eq!(
        error(s.run("ACL DELUSER alice default")),
        "ERR The 'default' user cannot be removed"
    );
    s.transcript(
        r#"
        > ACL USERS
        1) "alice"
        2) "default"
        > ACL DELUSER alice
        (integer) 1
    "#,
    );
}
