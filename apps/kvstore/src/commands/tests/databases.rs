//! Several databases: `SELECT`, `MOVE`, `SWAPDB`, `FLUSHDB`/`FLUSHALL`, and
//! how the log says which database a record belongs to.

use super::*;
use crate::aof::rewrite;
use crate::commands::Effects;

/// The log of `lines` run in one session, decoded to text.
fn log_of(s: &mut Session, lines: &[&str]) -> Vec<String> {
    lines.iter().flat_map(|l| s.logged(l)).collect()
}

fn keys_of(engine: &Engine) -> Vec<(usize, Vec<u8>, Vec<u8>)> {
    let mut all: Vec<_> = engine
        .databases()
        .iter()
        .enumerate()
        .flat_map(|(db, store)| {
            store
                .iter()
                .map(move |(k, e)| (db, k.to_vec(), e.value().to_vec()))
        })
        .collect();
    all.sort();
    all
}

#[test]
fn each_database_has_its_own_keys() {
    let mut s = Session::new();
    s.run("SET k zero");
    s.run("SELECT 3");
    assert_eq!(s.run("GET k"), Reply::Bulk(None));
    s.run("SET k three");
    assert_eq!(s.run("DBSIZE"), Reply::Integer(1));
    s.run("SELECT 0");
    assert_eq!(s.run("GET k"), Reply::bulk("zero"));
    let Reply::Verbatim(info) = s.run("INFO keyspace") else {
        panic!("INFO is verbatim text");
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("db0:keys=1,expires=0"), "{info}");
    assert!(info.contains("db3:keys=1,expires=0"), "{info}");
}

#[test]
fn records_say_their_database_only_when_it_changes() {
    let mut s = Session::new();
    assert_eq!(
        log_of(
            &mut s,
            &["SET a 1", "SELECT 2", "SET b 2", "SET c 3", "SELECT 0", "DEL a"]
        ),
        ["SET a 1", "SELECT 2", "SET b 2", "SET c 3", "SELECT 0", "DEL a"]
    );
}

#[test]
fn move_swapdb_and_flushes() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET k v
        OK
        > MOVE k 1
        (integer) 1
        > EXISTS k
        (integer) 0
        // gone from here
        > MOVE k 1
        (integer) 0
        > MOVE k 0
        (error) ERR source and destination objects are the same
        > MOVE k 99
        (error) ERR DB index is out of range
        > SET here x
        OK
        > SWAPDB 0 1
        OK
        // db 1's keys are db 0's now
        > GET k
        "v"
        > SWAPDB 0 16
        (error) ERR DB index is out of range
        // Found by the differential test: each index has its own error.
        > SWAPDB 2 abc
        (error) ERR invalid second DB index
        > SWAPDB 99999999999 0
        (error) ERR invalid first DB index
        > SELECT 1
        OK
        > GET here
        "x"
        > FLUSHDB
        OK
        > DBSIZE
        (integer) 0
    "#,
    );
    s.run("SELECT 0");
    assert_eq!(
        s.run("DBSIZE"),
        Reply::Integer(1),
        "FLUSHDB is one database"
    );
    s.run("SELECT 5");
    s.run("SET five 5");
    assert_eq!(s.run("FLUSHALL"), Reply::ok());
    assert_eq!(s.engine.key_count(), 0);
}

#[test]
fn swapdb_waits_for_a_rewrite() {
    let mut s = Session::new();
    s.engine.aof_rewrite_started(s.now);
    assert!(matches!(s.run("SWAPDB 0 1"), Reply::Error(e) if e.contains("rewritten")));
}

#[test]
fn the_log_and_a_rewrite_replay_every_database() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        SET a 0
        SELECT 4
        SET a 4
        SET b 4
        MOVE b 7
        SELECT 7
        SET c 7
        SWAPDB 4 9
        SELECT 9
        APPEND a x
        SELECT 0
        SET z 0
    "#,
    );
    let now = s.now;
    assert_eq!(keys_of(&load(&log, now)), keys_of(&s.engine));
    // A compact log of every database replays to the same keys.
    let compact = s.rewrite(1, |_| Effects::default());
    assert_eq!(keys_of(&load(&compact, now)), keys_of(&s.engine));
    // One database alone, as before: no SELECT at all.
    let single = rewrite(s.engine.store(), now);
    assert!(!single.windows(6).any(|w| w == b"SELECT"));
}

#[test]
fn records_logged_between_a_rewrites_steps_land_in_their_database() {
    // The log is in database 0 when the rewrite starts and the scan goes
    // through databases 0, 2 and 5; records logged between its steps, in
    // database 0 without a SELECT or in another after one, must replay in
    // the database they were made in.
    let mut s = Session::new();
    for db in [2, 5, 0] {
        s.run(&format!("SELECT {db}"));
        for i in 0..5 {
            s.run(&format!("RPUSH list{i} {db}"));
        }
    }
    let mut step = 0;
    let new_log = s.rewrite(1, |s| {
        step += 1;
        let db = [0, 2, 5][step % 3];
        s.run(&format!("SELECT {db}"));
        s.exec(&format!("RPUSH list{} step{step}", step % 7))
            .effects
    });
    assert!(step > 10, "several steps");
    let engine = load(&new_log, s.now);
    assert_eq!(keys_of(&engine), keys_of(&s.engine));
    let lists = |e: &Engine| -> Vec<_> {
        e.databases()
            .iter()
            .map(|db| {
                db.iter()
                    .map(|(k, v)| (k.to_vec(), v.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    assert_eq!(lists(&engine), lists(&s.engine));
}
