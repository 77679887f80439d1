//! Geospatial indexing as Redis does it: points kept in a sorted set,
//! each scored by its 52-bit [`hash`], and searches that look at the cell
//! around the centre and its eight neighbours, at the cell size the
//! radius asks for, then keep the points within the shape ([`search`]).
//! Distances are great-circle (haversine) on a sphere of Redis's radius;
//! every step is computed in the same order of double operations as
//! Redis, so that the same points are found, in the same order, at the
//! same printed distances.
//!
//! ```
//! use kvstore::geo;
//!
//! let palermo = geo::hash::encode(geo::hash::WGS84, 13.361389, 38.115556, geo::STEP_MAX).unwrap();
//! let catania = geo::hash::encode(geo::hash::WGS84, 15.087269, 37.502669, geo::STEP_MAX).unwrap();
//! let (a, b) = (
//!     geo::hash::decode_score(palermo.align52() as f64),
//!     geo::hash::decode_score(catania.align52() as f64),
//! );
//! assert_eq!(geo::format_distance(geo::distance(a.0, a.1, b.0, b.1) / 1000.0), "166.2742");
//! ```

pub mod hash;
pub mod search;

use alloc::string::String;

/// Bits per coordinate of a score.
pub const STEP_MAX: u8 = 26;
/// The lowest latitude Web Mercator (and so `GEOADD`) takes.
pub const LAT_MIN: f64 = -85.051_128_78;
/// The highest latitude.
pub const LAT_MAX: f64 = 85.051_128_78;
/// The lowest longitude.
pub const LONG_MIN: f64 = -180.0;
/// The highest longitude.
pub const LONG_MAX: f64 = 180.0;
/// The Earth's radius Redis measures with, in metres.
const EARTH_RADIUS: f64 = 6_372_797.560_856;
/// Degrees to radians, as Redis's `M_PI / 180.0`.
const D_R: f64 = core::f64::consts::PI / 180.0;

fn deg_rad(degrees: f64) -> f64 {
    degrees * D_R
}

fn rad_deg(radians: f64) -> f64 {
    radians / D_R
}

/// Metres between two latitudes along a meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * libm::fabs(deg_rad(lat2) - deg_rad(lat1))
}

/// Metres between two points (longitude, latitude in degrees) along the
/// great circle.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (deg_rad(lon1), deg_rad(lon2));
    let v = libm::sin((lon2r - lon1r) / 2.0);
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = libm::sin((lat2r - lat1r) / 2.0);
    let a = u * u + libm::cos(lat1r) * libm::cos(lat2r) * v * v;
    2.0 * EARTH_RADIUS * libm::asin(libm::sqrt(a))
}

/// A distance as Redis prints one: rounded to four decimals, halves to
/// even (`166.2742`, `0.0000`).
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return String::from("0.0000");
    }
    let scaled = libm::rint(d * 10_000.0);
    // Out of i64's range C's llrint gives i64::MIN.
    let n = if scaled.is_finite() && scaled.abs() < 9.223_372_036_854_775e18 {
        scaled as i64
    } else {
        i64::MIN
    };
    let sign = if n < 0 { "-" } else { "" };
    let n = n.unsigned_abs();
    alloc::format!("{sign}{}.{:04}", n / 10_000, n % 10_000)
}

/// A coordinate as Redis prints one: 17 decimals, trailing zeros (and a
/// bare point) cut, `-0` as `0`.
pub fn format_coordinate(x: f64) -> String {
    if x.is_infinite() {
        return String::from(if x > 0.0 { "inf" } else { "-inf" });
    }
    let mut text = alloc::format!("{x:.17}");
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    if text == "-0" {
        text = String::from("0");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_as_redis_prints_them() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.775), "0.7750");
        assert_eq!(format_distance(166_274.151_6), "166274.1516");
    }

    #[test]
    fn coordinates_print_with_trailing_zeros_cut() {
        assert_eq!(
            format_coordinate(13.361_389_338_970_184),
            "13.36138933897018433"
        );
        assert_eq!(format_coordinate(2.5), "2.5");
        assert_eq!(format_coordinate(-180.0), "-180");
        assert_eq!(format_coordinate(-0.0), "0");
    }

    #[test]
    fn a_degree_of_latitude_is_about_111_km() {
        let d = distance(0.0, 0.0, 0.0, 1.0);
        assert!((d - 111_226.0).abs() < 10.0, "{d}");
        assert_eq!(distance(5.0, 5.0, 5.0, 5.0), 0.0);
    }
}
