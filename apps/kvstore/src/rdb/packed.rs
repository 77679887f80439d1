//! Redis's packed encodings, as they appear inside a serialized value:
//! listpacks (Redis 7), ziplists (older payloads) and intsets. Each is
//! checked whole (header, every entry, the terminator) while read, as
//! Redis's deep sanitization does, and read into plain elements: integers
//! come out as their decimal text.

use alloc::vec::Vec;

use super::cursor::{text, Bad};

/// The byte that ends a listpack or a ziplist.
const END: u8 = 0xff;

/// The elements of a listpack.
///
/// A listpack is its total size (u32 LE), its element count (u16 LE,
/// 65535 when not known), the entries and [`END`]. An entry is an
/// encoding byte (with the data's length, or a small integer, in it),
/// the data, and the entry's own length written backwards ("backlen"),
/// so that it can be walked from the end.
pub fn listpack(blob: &[u8]) -> Result<Vec<Vec<u8>>, Bad> {
    let header: [u8; 6] = blob.get(..6).ok_or(Bad)?.try_into().map_err(|_| Bad)?;
    let total = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u16::from_le_bytes([header[4], header[5]]);
    if total != blob.len() || blob.last() != Some(&END) {
        return Err(Bad);
    }
    let body = &blob[6..blob.len() - 1];
    let mut elements = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let (element, size) = listpack_entry(&body[at..])?;
        let backlen = backlen(size);
        let written = body.get(at + size..at + size + backlen.len).ok_or(Bad)?;
        if written != &backlen.bytes[..backlen.len] {
            return Err(Bad);
        }
        elements.push(element);
        at += size + backlen.len;
    }
    if count != u16::MAX && usize::from(count) != elements.len() {
        return Err(Bad);
    }
    Ok(elements)
}

/// One listpack entry at the start of `bytes`: its element and the size
/// of its encoding and data (without the backlen).
fn listpack_entry(bytes: &[u8]) -> Result<(Vec<u8>, usize), Bad> {
    let first = *bytes.first().ok_or(Bad)?;
    let get = |from: usize, n: usize| bytes.get(from..from + n).ok_or(Bad);
    let int = |n: usize| -> Result<i64, Bad> {
        let raw = get(1, n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        // Sign-extend from n bytes.
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(le) << shift) >> shift)
    };
    Ok(match first {
        // 0xxxxxxx: an integer 0..=127.
        0x00..=0x7f => (text(i64::from(first)), 1),
        // 10xxxxxx: a string of up to 63 bytes.
        0x80..=0xbf => {
            let n = usize::from(first & 0x3f);
            (get(1, n)?.to_vec(), 1 + n)
        }
        // 110xxxxx yyyyyyyy: a 13-bit signed integer.
        0xc0..=0xdf => {
            let raw = i64::from(first & 0x1f) << 8 | i64::from(*bytes.get(1).ok_or(Bad)?);
            ((text((raw << 51) >> 51)), 2)
        }
        // 1110xxxx yyyyyyyy: a string of up to 4095 bytes.
        0xe0..=0xef => {
            let n = usize::from(first & 0x0f) << 8 | usize::from(*bytes.get(1).ok_or(Bad)?);
            (get(2, n)?.to_vec(), 2 + n)
        }
        // 11110000 + u32 LE: a longer string.
        0xf0 => {
            let len = get(1, 4)?;
            let n = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
            (get(5, n)?.to_vec(), 5 + n)
        }
        0xf1 => (text(int(2)?), 3),
        0xf2 => (text(int(3)?), 4),
        0xf3 => (text(int(4)?), 5),
        0xf4 => (text(int(8)?), 9),
        _ => return Err(Bad),
    })
}

/// Builds a listpack (what [`listpack`] reads), integers in their
/// shortest integer encoding: the nodes of a DUMPed stream.
pub struct ListpackWriter {
    bytes: Vec<u8>,
    count: usize,
}

impl ListpackWriter {
    /// An empty listpack (its header is written by [`finish`](Self::finish)).
    pub fn new() -> Self {
        ListpackWriter {
            bytes: alloc::vec![0; 6],
            count: 0,
        }
    }

    fn entry(&mut self, encoded: &[u8]) {
        self.bytes.extend_from_slice(encoded);
        let back = backlen(encoded.len());
        self.bytes.extend_from_slice(&back.bytes[..back.len]);
        self.count += 1;
    }

    /// Appends an integer.
    pub fn int(&mut self, n: i64) {
        let mut e = Vec::with_capacity(9);
        match n {
            0..=127 => e.push(n as u8),
            -4096..=4095 => {
                let raw = (n as u16) & 0x1fff;
                e.extend_from_slice(&[0xc0 | (raw >> 8) as u8, raw as u8]);
            }
            _ if i16::try_from(n).is_ok() => {
                e.push(0xf1);
                e.extend_from_slice(&(n as i16).to_le_bytes());
            }
            -8_388_608..=8_388_607 => {
                e.push(0xf2);
                e.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
            }
            _ if i32::try_from(n).is_ok() => {
                e.push(0xf3);
                e.extend_from_slice(&(n as i32).to_le_bytes());
            }
            _ => {
                e.push(0xf4);
                e.extend_from_slice(&n.to_le_bytes());
            }
        }
        self.entry(&e);
    }

    /// Appends a string.
    pub fn bytes(&mut self, s: &[u8]) {
        let mut e = Vec::with_capacity(s.len() + 5);
        match s.len() {
            n @ 0..=63 => e.push(0x80 | n as u8),
            n @ 64..=4095 => e.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]),
            n => {
                e.push(0xf0);
                e.extend_from_slice(&(n as u32).to_le_bytes());
            }
        }
        e.extend_from_slice(s);
        self.entry(&e);
    }

    /// The listpack: header, entries, terminator.
    pub fn finish(mut self) -> Vec<u8> {
        self.bytes.push(END);
        let total = self.bytes.len() as u32;
        let count = u16::try_from(self.count).unwrap_or(u16::MAX);
        self.bytes[..4].copy_from_slice(&total.to_le_bytes());
        self.bytes[4..6].copy_from_slice(&count.to_le_bytes());
        self.bytes
    }
}

impl Default for ListpackWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// A listpack entry's length as its backlen writes it: 7 bits a byte,
/// most significant first, every byte but the first with its top bit set.
struct Backlen {
    bytes: [u8; 5],
    len: usize,
}

fn backlen(size: usize) -> Backlen {
    let mut groups = [0u8; 5];
    let mut len = 0;
    let mut rest = size;
    loop {
        groups[len] = (rest & 0x7f) as u8;
        len += 1;
        rest >>= 7;
        if rest == 0 || len == 5 {
            break;
        }
    }
    // groups[0] is the least significant; it is written last.
    let mut bytes = [0u8; 5];
    for i in 0..len {
        let group = groups[len - 1 - i];
        bytes[i] = if i == 0 { group } else { group | 0x80 };
    }
    Backlen { bytes, len }
}

/// The elements of a ziplist (the packed encoding before listpacks).
///
/// A ziplist is its total size (u32 LE), the offset of its last entry
/// (u32 LE), its element count (u16 LE, 65535 when not known), the
/// entries and [`END`]. An entry is the previous entry's size (one byte,
/// or 0xfe and a u32 LE), an encoding and the data.
pub fn ziplist(blob: &[u8]) -> Result<Vec<Vec<u8>>, Bad> {
    let header = blob.get(..10).ok_or(Bad)?;
    let word =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    let (total, tail) = (word(0) as usize, word(4) as usize);
    let count = u16::from_le_bytes([header[8], header[9]]);
    if total != blob.len() || blob.last() != Some(&END) {
        return Err(Bad);
    }
    let end = blob.len() - 1;
    let (mut elements, mut at, mut previous, mut last) = (Vec::new(), 10, 0, 10);
    while at < end {
        let entry = &blob[at..end];
        let (prevlen, skip) = match *entry.first().ok_or(Bad)? {
            0xfe => {
                let raw = entry.get(1..5).ok_or(Bad)?;
                (
                    u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize,
                    5,
                )
            }
            0xff => return Err(Bad),
            n => (usize::from(n), 1),
        };
        if prevlen != previous {
            return Err(Bad);
        }
        let (element, size) = ziplist_data(&entry[skip..])?;
        elements.push(element);
        last = at;
        previous = skip + size;
        at += previous;
    }
    if at != end || tail != last || (count != u16::MAX && usize::from(count) != elements.len()) {
        return Err(Bad);
    }
    Ok(elements)
}

/// One ziplist entry's encoding and data at the start of `bytes`: the
/// element and the bytes they take.
fn ziplist_data(bytes: &[u8]) -> Result<(Vec<u8>, usize), Bad> {
    let first = *bytes.first().ok_or(Bad)?;
    let get = |from: usize, n: usize| bytes.get(from..from + n).ok_or(Bad);
    let int = |n: usize| -> Result<Vec<u8>, Bad> {
        let raw = get(1, n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        let shift = 64 - 8 * n as u32;
        Ok(text((i64::from_le_bytes(le) << shift) >> shift))
    };
    Ok(match first {
        // 00pppppp: a string of up to 63 bytes.
        0x00..=0x3f => {
            let n = usize::from(first);
            (get(1, n)?.to_vec(), 1 + n)
        }
        // 01pppppp qqqqqqqq: up to 16383 bytes (big-endian length).
        0x40..=0x7f => {
            let n = usize::from(first & 0x3f) << 8 | usize::from(*bytes.get(1).ok_or(Bad)?);
            (get(2, n)?.to_vec(), 2 + n)
        }
        // 10000000 + u32 BE: a longer string.
        0x80 => {
            let len = get(1, 4)?;
            let n = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            (get(5, n)?.to_vec(), 5 + n)
        }
        0xc0 => (int(2)?, 3),
        0xd0 => (int(4)?, 5),
        0xe0 => (int(8)?, 9),
        0xf0 => (int(3)?, 4),
        0xfe => (int(1)?, 2),
        // 1111xxxx: xxxx - 1 is an integer 0..=12.
        0xf1..=0xfd => (text(i64::from(first & 0x0f) - 1), 1),
        _ => return Err(Bad),
    })
}

/// The fields and values of a zipmap (Redis 2's small hashes),
/// alternating: a count byte (254 when not known), then for each pair the
/// field's length, the field, the value's length, a count of unused
/// bytes after the value, the value and those bytes; then [`END`]. A
/// length is one byte below 254, or 254 and a u32 LE.
pub fn zipmap(blob: &[u8]) -> Result<Vec<Vec<u8>>, Bad> {
    let count = *blob.first().ok_or(Bad)?;
    let mut c = super::cursor::Cursor::new(&blob[1..]);
    let mut elements = Vec::new();
    let length = |c: &mut super::cursor::Cursor<'_>| -> Result<Option<usize>, Bad> {
        Ok(match c.byte()? {
            END => None,
            254 => {
                let raw = c.take(4)?;
                let n = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
                if n < 254 {
                    return Err(Bad);
                }
                Some(n)
            }
            n => Some(usize::from(n)),
        })
    };
    while let Some(n) = length(&mut c)? {
        elements.push(c.take(n)?.to_vec());
        let n = length(&mut c)?.ok_or(Bad)?;
        let free = usize::from(c.byte()?);
        elements.push(c.take(n)?.to_vec());
        c.take(free)?;
    }
    c.end()?;
    if count < 254 && usize::from(count) * 2 != elements.len() {
        return Err(Bad);
    }
    Ok(elements)
}

/// The members of an intset: its integer width (u32 LE: 2, 4 or 8
/// bytes), its length (u32 LE) and the integers, little-endian, strictly
/// increasing.
pub fn intset(blob: &[u8]) -> Result<Vec<i64>, Bad> {
    let header = blob.get(..8).ok_or(Bad)?;
    let width = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || len.checked_mul(width) != Some(blob.len() - 8) {
        return Err(Bad);
    }
    let mut members: Vec<i64> = Vec::new();
    for raw in blob[8..].chunks_exact(width) {
        let mut le = [0u8; 8];
        le[..width].copy_from_slice(raw);
        let shift = 64 - 8 * width as u32;
        let n = (i64::from_le_bytes(le) << shift) >> shift;
        if members.last().is_some_and(|&last| last >= n) {
            return Err(Bad);
        }
        members.push(n);
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlen_encoding() {
        let b = backlen(5);
        assert_eq!(&b.bytes[..b.len], [5]);
        let b = backlen(200);
        assert_eq!(&b.bytes[..b.len], [1, 200 - 128 + 128]);
        let b = backlen(16384);
        assert_eq!(&b.bytes[..b.len], [1, 0x80, 0x80]);
    }

    #[test]
    fn a_listpack_is_read_and_checked() {
        // [ "a", 5, -3 ]: 6-bit string, 7-bit uint, 13-bit int.
        let mut lp = alloc::vec![0, 0, 0, 0, 3, 0, 0x81, b'a', 2, 5, 1, 0xdf, 0xfd, 2, 0xff];
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let elements = listpack(&lp).unwrap();
        assert_eq!(elements, [&b"a"[..], b"5", b"-3"]);
        for cut in 0..lp.len() {
            assert!(listpack(&lp[..cut]).is_err(), "cut at {cut}");
        }
        let mut wrong_count = lp.clone();
        wrong_count[4] = 2;
        assert!(listpack(&wrong_count).is_err());
        let mut wrong_backlen = lp.clone();
        wrong_backlen[8] = 3;
        assert!(listpack(&wrong_backlen).is_err());
    }

    #[test]
    fn the_listpack_writer_round_trips() {
        let mut lp = ListpackWriter::new();
        let ints = [
            0,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -32768,
            32767,
            8_388_607,
            -8_388_608,
            1 << 31,
            i64::MIN,
            i64::MAX,
        ];
        for n in ints {
            lp.int(n);
        }
        let long = [b'x'; 5000];
        for s in [&b""[..], b"abc", &long[..64], &long[..4095], &long[..]] {
            lp.bytes(s);
        }
        let elements = listpack(&lp.finish()).unwrap();
        for (element, n) in elements.iter().zip(ints) {
            assert_eq!(*element, text(n));
        }
        assert_eq!(elements[ints.len() + 4].len(), 5000);
    }

    #[test]
    fn an_intset_must_be_sorted_and_whole() {
        let set = [2, 0, 0, 0, 2, 0, 0, 0, 0xf9, 0xff, 3, 0];
        assert_eq!(intset(&set).unwrap(), [-7, 3]);
        let unsorted = [2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0xf9, 0xff];
        assert!(intset(&unsorted).is_err());
        assert!(intset(&set[..11]).is_err());
        let odd_width = [3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0];
        assert!(intset(&odd_width).is_err());
        assert!(
            intset(&[8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err(),
            "length overflow"
        );
    }
}
