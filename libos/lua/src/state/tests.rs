extern crate std;

use super::*;
use alloc::string::String;

/// What the test callbacks see: the calls they had.
#[derive(Default)]
struct Host {
    calls: Vec<Vec<u8>>,
}

fn record(s: &mut Stack<'_>, host: &mut Host) -> Result<usize, Raise> {
    match s.bytes(1) {
        Some(b) if b == b"fail" => Err(s.raise_message(b"asked to fail")),
        Some(b) => {
            host.calls.push(b.clone());
            s.push_bytes(&b).map_err(|_| s.raise())?;
            Ok(1)
        }
        None => Err(s.raise_message(b"want a string")),
    }
}

fn run(state: &mut State<Host>, code: &str, host: &mut Host) -> Result<String, String> {
    state
        .load(b"f", b"@test", code.as_bytes())
        .map_err(|e| String::from_utf8_lossy(&e).into_owned())?;
    state.call(b"f", None, host, |s, outcome, _| {
        let text = s.bytes(-1).map_or_else(
            || std::format!("{:?}", s.kind(-1)),
            |b| String::from_utf8_lossy(&b).into_owned(),
        );
        match outcome {
            Outcome::Returned => Ok(text),
            _ => Err(text),
        }
    })
}

#[test]
fn runs_code_and_formats_numbers_as_lua_does() {
    let mut state = State::new(1 << 20).unwrap();
    let mut host = Host::default();
    assert_eq!(run(&mut state, "return 1 + 1", &mut host), Ok("2".into()));
    assert_eq!(run(&mut state, "return 0.1", &mut host), Ok("0.1".into()));
    assert_eq!(
        run(
            &mut state,
            "return string.format('%5.2f|%d', 3.14159, 42)",
            &mut host
        ),
        Ok(" 3.14|42".into())
    );
    assert_eq!(
        run(&mut state, "return tostring(1e15)", &mut host),
        Ok("1e+15".into())
    );
    assert_eq!(
        run(
            &mut state,
            "return tonumber('0x10') + tonumber('  2.5  ')",
            &mut host
        ),
        Ok("18.5".into())
    );
    assert_eq!(
        run(&mut state, "return newproxy", &mut host),
        Ok("Nil".into())
    );
}

#[test]
fn reports_errors_with_the_chunk_name() {
    let mut state = State::new(1 << 20).unwrap();
    let mut host = Host::default();
    assert_eq!(
        run(&mut state, "error('boom')", &mut host),
        Err("test:1: boom".into())
    );
    assert_eq!(
        run(&mut state, "return 1 +", &mut host),
        Err("test:1: unexpected symbol near '<eof>'".into())
    );
}

#[test]
fn callbacks_get_the_host_and_raise_errors() {
    let mut state = State::new(1 << 20).unwrap();
    state.set_function(b"lib", b"record", record).unwrap();
    let mut host = Host::default();
    assert_eq!(
        run(
            &mut state,
            "return lib.record('a') .. lib.record(7)",
            &mut host
        ),
        Ok("a7".into())
    );
    assert_eq!(host.calls, [b"a".to_vec(), b"7".to_vec()]);
    assert_eq!(
        run(&mut state, "return lib.record('fail')", &mut host),
        Err("asked to fail".into())
    );
    assert_eq!(
        run(
            &mut state,
            "local ok, e = pcall(lib.record, {}) return tostring(ok) .. ' ' .. e",
            &mut host
        ),
        Ok("false want a string".into())
    );
}

#[test]
fn a_script_past_the_limit_runs_out_of_memory_and_the_state_lives_on() {
    let mut state = State::new(256 << 10).unwrap();
    let mut host = Host::default();
    let code = "local t = {} for i = 1, 1e7 do t[i] = string.rep('x', 100) .. i end return #t";
    state.load(b"f", b"@test", code.as_bytes()).unwrap();
    let outcome = state.call(b"f", None, &mut host, |_, o, _| o);
    assert_eq!(outcome, Outcome::OutOfMemory);
    state.collect();
    assert!(state.used() < 256 << 10);
    assert_eq!(
        run(&mut state, "return 'still here'", &mut host),
        Ok("still here".into())
    );
}

#[test]
fn globals_hold_string_arrays() {
    let mut state = State::new(1 << 20).unwrap();
    let mut host = Host::default();
    state
        .set_global_strings(b"KEYS", &[b"k1".to_vec(), b"k2".to_vec()])
        .unwrap();
    assert_eq!(
        run(&mut state, "return KEYS[2] .. #KEYS", &mut host),
        Ok("k22".into())
    );
}

#[test]
fn the_stack_refuses_bad_indexes() {
    let mut state: State<Host> = State::new(1 << 20).unwrap();
    let mut s = state.stack();
    assert_eq!(s.kind(1), Kind::None);
    assert_eq!(s.set_index(1, 1), Err(StackError::BadIndex));
    s.push_number(1.0).unwrap();
    assert_eq!(s.get_field(1, b"x"), Err(StackError::BadIndex));
    assert_eq!(s.bytes(-1), Some(b"1".to_vec()));
    assert_eq!(s.kind(-1), Kind::Number);
}

#[test]
fn pairs_visits_every_field_and_keeps_its_key_out_of_reach() {
    let mut state: State<Host> = State::new(1 << 20).unwrap();
    let mut s = state.stack();
    s.push_table(0, 0).unwrap();
    for (k, v) in [(&b"a"[..], 1.0), (b"b", 2.0), (b"c", 3.0)] {
        s.push_number(v).unwrap();
        s.set_field(1, k).unwrap();
    }
    let mut seen = Vec::new();
    s.pairs(1, |view| {
        // Only the key and value are shown; popping more finds nothing.
        assert_eq!(view.top(), 2);
        seen.push((view.bytes(-2).unwrap(), view.number(-1).unwrap()));
        view.pop(5);
        view.remove(1);
        true
    })
    .unwrap();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen,
        [
            (b"a".to_vec(), 1.0),
            (b"b".to_vec(), 2.0),
            (b"c".to_vec(), 3.0)
        ]
    );
    assert_eq!(s.top(), 1);
    let mut count = 0;
    s.pairs(1, |_| {
        count += 1;
        false
    })
    .unwrap();
    assert_eq!((count, s.top()), (1, 1));
    assert_eq!(s.pairs(2, |_| true), Err(StackError::BadIndex));
}

#[test]
fn call_with_passes_strings_and_arrays() {
    let mut state = State::new(1 << 20).unwrap();
    let mut host = Host::default();
    state
        .load(b"f", b"@test", b"local a, t = ... return a .. #t .. t[2]")
        .unwrap();
    let items = [b"x".to_vec(), b"y".to_vec(), b"z".to_vec()];
    let text = state.call_with(
        b"f",
        None,
        &[Arg::Bytes(b"n="), Arg::Strings(&items)],
        &mut host,
        |s, outcome, _| (outcome, s.bytes(-1)),
    );
    assert_eq!(text, (Outcome::Returned, Some(b"n=3y".to_vec())));
}

fn stop_after_three(host: &mut Host) -> Option<Vec<u8>> {
    host.calls.push(b"tick".to_vec());
    (host.calls.len() >= 3).then(|| b"time is up".to_vec())
}

#[test]
fn a_tick_runs_while_code_runs_and_may_stop_it() {
    let mut state = State::new(1 << 20).unwrap();
    let mut host = Host::default();
    state.set_tick(100, Some(stop_after_three));
    let stopped = run(
        &mut state,
        "local a = 0 while true do a = a + 1 end",
        &mut host,
    );
    assert_eq!(stopped, Err("time is up".into()));
    assert_eq!(host.calls.len(), 3);
    // Caught by pcall, it is raised again at the next tick.
    let mut host = Host::default();
    let code = "for i = 1, 10 do pcall(function() while true do end end) end return 'out'";
    assert_eq!(run(&mut state, code, &mut host), Ok("out".into()));
    state.set_tick(100, None);
    assert_eq!(
        run(
            &mut state,
            "local a = 0 for i = 1, 1e5 do a = a + 1 end return a",
            &mut Host::default()
        ),
        Ok("100000".into())
    );
}

/// Says what its argument is: the null pointer, a coroutine, or other.
fn what(s: &mut Stack<'_>, _: &mut Host) -> Result<usize, Raise> {
    let name: &[u8] = match (s.is_null_pointer(1), s.is_thread(1)) {
        (true, _) => b"null",
        (_, true) => b"thread",
        _ => b"other",
    };
    s.push_bytes(name).map_err(|_| s.raise())?;
    s.push_null_pointer().map_err(|_| s.raise())?;
    Ok(2)
}

#[test]
fn the_null_pointer_is_one_value_scripts_can_pass_but_not_make() {
    let mut state = State::<Host>::new(1 << 20).unwrap();
    state.set_null_pointer(b"lib", b"null").unwrap();
    state.set_function(b"lib", b"what", what).unwrap();
    let mut host = Host::default();
    let code =
        "local a, n = lib.what(lib.null) local b = lib.what(coroutine.create(function() end)) \
        local c = lib.what({}) return a .. b .. c .. type(lib.null) .. tostring(n == lib.null)";
    assert_eq!(
        run(&mut state, code, &mut host),
        Ok("nullthreadotheruserdatatrue".into())
    );
}

#[test]
fn a_slot_calls_what_its_key_named_with_its_handler() {
    let mut state = State::<Host>::new(1 << 20).unwrap();
    let mut host = Host::default();
    state.load(b"f", b"@test", b"error('boom')").unwrap();
    state
        .load(b"h", b"@test", b"return 'handled: ' .. select(1, ...)")
        .unwrap();
    assert_eq!(state.slot_of(b"missing"), None);
    let (f, h) = (state.slot_of(b"f").unwrap(), state.slot_of(b"h").unwrap());
    assert_ne!(f, h);
    let read = |s: &mut Stack<'_>, outcome, _: &mut Host| (outcome, s.bytes(-1));
    let (outcome, text) = state.call_slot(f, Some(h), &mut host, read);
    assert_eq!(outcome, Outcome::Raised);
    assert!(text.unwrap().starts_with(b"handled: test:1: boom"));
    // The key may go; the slot keeps the function.
    state.unload(b"f");
    let (outcome, text) = state.call_slot(f, None, &mut host, read);
    assert_eq!(
        (outcome, text.as_deref()),
        (Outcome::Raised, Some(&b"test:1: boom"[..]))
    );
}
