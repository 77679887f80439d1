//! 52-bit geohashes as Redis computes them: latitude and longitude each
//! cut into 2^step cells, their cell numbers interleaved (latitude on the
//! even bits, longitude on the odd ones), a sorted set's score being the
//! hash at step 26.

use super::{LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};

/// A geohash of `step` bits per coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Hash {
    /// The interleaved cell numbers.
    pub bits: u64,
    /// Bits per coordinate, 1 to 32 (26 for scores).
    pub step: u8,
}

impl Hash {
    /// The "no hash" value Redis uses for neighbours left out of a search.
    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The hash left-aligned to 52 bits: the lowest score of its cell.
    pub fn align52(self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// A range of degrees.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Range {
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
}

/// The cell a hash covers.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Area {
    /// Its longitudes.
    pub longitude: Range,
    /// Its latitudes.
    pub latitude: Range,
}

/// The ranges scores are computed in: all longitudes, and the latitudes
/// of the Web Mercator projection.
pub const WGS84: (Range, Range) = (
    Range {
        min: LONG_MIN,
        max: LONG_MAX,
    },
    Range {
        min: LAT_MIN,
        max: LAT_MAX,
    },
);

fn interleave(lat: u32, lon: u32) -> u64 {
    (0..32).fold(0u64, |bits, i| {
        bits | (u64::from((lat >> i) & 1) << (2 * i)) | (u64::from((lon >> i) & 1) << (2 * i + 1))
    })
}

/// (latitude cell, longitude cell) of interleaved `bits`.
fn deinterleave(bits: u64) -> (u32, u32) {
    (0..32).fold((0u32, 0u32), |(lat, lon), i| {
        (
            lat | (((bits >> (2 * i)) & 1) as u32) << i,
            lon | (((bits >> (2 * i + 1)) & 1) as u32) << i,
        )
    })
}

/// The hash of (`lon`, `lat`) at `step` within the given ranges; `None`
/// outside them or outside the Web Mercator limits.
pub fn encode(ranges: (Range, Range), lon: f64, lat: f64, step: u8) -> Option<Hash> {
    let (lon_range, lat_range) = ranges;
    if step == 0 || step > 32 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min) * cells;
    Some(Hash {
        bits: interleave(lat_offset as u32, lon_offset as u32),
        step,
    })
}

/// The cell `hash` covers within the given ranges (`None` for the zero
/// hash).
pub fn decode(ranges: (Range, Range), hash: Hash) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let (lon_range, lat_range) = ranges;
    let (lat_cell, lon_cell) = deinterleave(hash.bits);
    let cells = (1u64 << hash.step) as f64;
    let edge = |range: Range, cell: u32| {
        let scale = range.max - range.min;
        Range {
            min: range.min + (f64::from(cell) * 1.0 / cells) * scale,
            max: range.min + (f64::from(cell.wrapping_add(1)) * 1.0 / cells) * scale,
        }
    };
    Some(Area {
        longitude: edge(lon_range, lon_cell),
        latitude: edge(lat_range, lat_cell),
    })
}

/// The centre of a score's cell, (longitude, latitude), within the
/// limits. A score that no `GEOADD` wrote (negative, fractional, too
/// large) is read as C converts a double to a 64-bit unsigned integer on
/// x86-64, as Redis reads it there.
pub fn decode_score(score: f64) -> (f64, f64) {
    let hash = Hash {
        bits: c_u64(score),
        step: super::STEP_MAX,
    };
    let area = decode(WGS84, hash).unwrap_or_default();
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// `(uint64_t)x` as x86-64 compilers do it (through the signed
/// conversion, whose out-of-range answer is 2^63).
fn c_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let signed = |v: f64| -> u64 {
        if (-TWO_63..TWO_63).contains(&v) {
            v as i64 as u64
        } else {
            1 << 63
        }
    };
    if x < TWO_63 {
        signed(x)
    } else {
        signed(x - TWO_63) ^ (1 << 63)
    }
}

/// Longitude bits (odd) and latitude bits (even) of a hash.
const LON_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const LAT_BITS: u64 = 0x5555_5555_5555_5555;

/// Moves a hash one cell along the coordinate on the `moving` bits
/// (`LON_BITS`: east for `d` 1, west for -1; `LAT_BITS`: north, south):
/// the other coordinate's bits are filled with ones so that the carry
/// runs through them, and cleared again after.
fn move_along(hash: &mut Hash, moving: u64, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut along = hash.bits & moving;
    let other = hash.bits & !moving;
    let zz = !moving >> shift;
    if d > 0 {
        along = along.wrapping_add(zz + 1);
    } else {
        along |= zz;
        along = along.wrapping_sub(zz + 1);
    }
    along &= moving >> shift;
    hash.bits = along | other;
}

/// The eight cells around a hash, in Redis's search order after the
/// centre: north, south, east, west, north-east, north-west, south-east,
/// south-west.
pub fn neighbours(hash: Hash) -> [Hash; 8] {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_along(&mut h, LON_BITS, dx);
        move_along(&mut h, LAT_BITS, dy);
        h
    };
    [
        moved(0, 1),
        moved(0, -1),
        moved(1, 0),
        moved(-1, 0),
        moved(1, 1),
        moved(-1, 1),
        moved(1, -1),
        moved(-1, -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for (lat, lon) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            assert_eq!(deinterleave(interleave(lat, lon)), (lat, lon));
        }
        assert_eq!(interleave(1, 0), 1, "latitude on the even bits");
        assert_eq!(interleave(0, 1), 2);
    }

    #[test]
    fn a_score_decodes_near_its_point() {
        let hash = encode(WGS84, 13.361389, 38.115556, 26).unwrap();
        // Palermo's score in Redis's documentation.
        assert_eq!(hash.align52(), 3_479_099_956_230_698);
        let (lon, lat) = decode_score(3_479_099_956_230_698.0);
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(encode(WGS84, 181.0, 0.0, 26), None);
        assert_eq!(encode(WGS84, 0.0, 86.0, 26), None);
    }

    #[test]
    fn neighbours_are_one_cell_away() {
        let hash = encode(WGS84, 10.0, 10.0, 10).unwrap();
        let [north, south, east, west, ..] = neighbours(hash);
        let centre = decode(WGS84, hash).unwrap();
        let area = |h| decode(WGS84, h).unwrap();
        // Each neighbour's near edge is the centre's far one.
        for (edge, outside) in [
            (area(north).latitude.min, centre.latitude.max),
            (area(south).latitude.max, centre.latitude.min),
            (area(east).longitude.min, centre.longitude.max),
            (area(west).longitude.max, centre.longitude.min),
        ] {
            assert_eq!(edge, outside);
        }
    }

    #[test]
    fn foreign_scores_convert_as_on_x86() {
        assert_eq!(c_u64(-1.0), u64::MAX);
        assert_eq!(c_u64(2.5), 2);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(c_u64(1e19), 10_000_000_000_000_000_000);
    }
}
