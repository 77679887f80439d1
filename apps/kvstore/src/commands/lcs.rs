//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest
//! common subsequence of two strings, its length, or where its runs lie.
//!
//! The classic dynamic-programming table: `table[i][j]` is the length of
//! the longest common subsequence of the first `i` bytes of `a` and the
//! first `j` of `b`. Walking it back from the end spells the subsequence
//! backwards and finds its runs, the stretches that are contiguous in
//! both strings; `IDX` reports the runs from the last to the first, as
//! Redis does (a run broken off by a jump in only one string ends there,
//! and the byte that broke it starts no run of its own).
//!
//! The table takes `(|a|+1)·(|b|+1)` four-byte cells, allocated fallibly
//! and refused past `proto-max-bulk-len`.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::num::parse_i64;
use crate::resp::Reply;

/// What the caller asked for.
struct Options {
    len: bool,
    idx: bool,
    min_match_len: u64,
    with_match_len: bool,
}

fn options(args: &[Vec<u8>]) -> Result<Options, Reply> {
    let mut options = Options {
        len: false,
        idx: false,
        min_match_len: 0,
        with_match_len: false,
    };
    let mut i = 3;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        match opt.as_slice() {
            b"IDX" => options.idx = true,
            b"LEN" => options.len = true,
            b"WITHMATCHLEN" => options.with_match_len = true,
            b"MINMATCHLEN" if i + 1 < args.len() => {
                let n = parse_i64(&args[i + 1]).ok_or_else(errors::not_integer)?;
                options.min_match_len = n.max(0) as u64;
                i += 1;
            }
            _ => return Err(errors::syntax()),
        }
        i += 1;
    }
    if options.len && options.idx {
        return Err(Reply::error(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(options)
}

/// The string at `key` (empty if missing), or the error Redis gives for
/// another type.
fn string_at(x: &mut Exec<'_>, key: &[u8]) -> Result<Vec<u8>, Reply> {
    match x.read_string(key) {
        Ok(value) => Ok(value.map(|v| v.to_vec()).unwrap_or_default()),
        Err(_) => Err(Reply::error(
            "ERR The specified keys must contain string values",
        )),
    }
}

/// The table of common-subsequence lengths, row-major with `b.len() + 1`
/// columns.
struct Table {
    cells: Vec<u32>,
    columns: usize,
}

impl Table {
    fn build(a: &[u8], b: &[u8], limit: u64) -> Result<Table, Reply> {
        let columns = b.len() + 1;
        let cells = (a.len() + 1).checked_mul(columns);
        let too_big = || {
            Reply::error(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            )
        };
        let cells = cells.ok_or_else(too_big)?;
        if cells.saturating_mul(4) as u64 > limit {
            return Err(too_big());
        }
        let mut table = Vec::new();
        if table.try_reserve_exact(cells).is_err() {
            return Err(Reply::error(
                "ERR Insufficient memory, failed allocating transient memory for LCS",
            ));
        }
        table.resize(cells, 0u32);
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                table[i * columns + j] = if a[i - 1] == b[j - 1] {
                    table[(i - 1) * columns + j - 1] + 1
                } else {
                    table[(i - 1) * columns + j].max(table[i * columns + j - 1])
                };
            }
        }
        Ok(Table {
            cells: table,
            columns,
        })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.columns + j]
    }
}

/// One run: where it lies in `a` and in `b` (inclusive).
struct Run {
    a: (usize, usize),
    b: (usize, usize),
}

/// Walks the table back from the end: the subsequence, and its runs from
/// last to first.
fn walk(a: &[u8], b: &[u8], table: &Table) -> (Vec<u8>, Vec<Run>) {
    let total = table.at(a.len(), b.len()) as usize;
    let mut found = alloc::vec![0u8; total];
    let mut runs = Vec::new();
    let mut current: Option<Run> = None;
    let (mut i, mut j, mut left) = (a.len(), b.len(), total);
    while i > 0 && j > 0 {
        let mut ends = false;
        if a[i - 1] == b[j - 1] {
            found[left - 1] = a[i - 1];
            left -= 1;
            match &mut current {
                None => {
                    current = Some(Run {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    })
                }
                // Contiguous in both: the run grows backwards.
                Some(run) if run.a.0 == i && run.b.0 == j => {
                    run.a.0 -= 1;
                    run.b.0 -= 1;
                }
                Some(_) => ends = true,
            }
            if current.as_ref().is_some_and(|r| r.a.0 == 0 || r.b.0 == 0) {
                ends = true;
            }
            i -= 1;
            j -= 1;
        } else {
            if table.at(i - 1, j) > table.at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            ends = current.is_some();
        }
        if ends {
            runs.extend(current.take());
        }
    }
    (found, runs)
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`.
pub(crate) fn lcs(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let a = match string_at(x, &args[1]) {
        Ok(a) => a,
        Err(reply) => return reply,
    };
    let b = match string_at(x, &args[2]) {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let options = match options(args) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let table = match Table::build(&a, &b, x.config.proto_max_bulk_len) {
        Ok(table) => table,
        Err(reply) => return reply,
    };
    let total = table.at(a.len(), b.len());
    if options.len {
        return Reply::Integer(i64::from(total));
    }
    let (found, runs) = walk(&a, &b, &table);
    if !options.idx {
        return Reply::bulk(found);
    }
    let pair = |(start, end): (usize, usize)| {
        Reply::array(alloc::vec![
            Reply::Integer(start as i64),
            Reply::Integer(end as i64)
        ])
    };
    let matches = runs
        .into_iter()
        .filter(|run| (run.a.1 - run.a.0 + 1) as u64 >= options.min_match_len)
        .map(|run| {
            let mut item = alloc::vec![pair(run.a), pair(run.b)];
            if options.with_match_len {
                item.push(Reply::Integer((run.a.1 - run.a.0 + 1) as i64));
            }
            Reply::array(item)
        })
        .collect();
    // A map in RESP3.
    Reply::fields([
        ("matches", Reply::array(matches)),
        ("len", Reply::Integer(i64::from(total))),
    ])
}
