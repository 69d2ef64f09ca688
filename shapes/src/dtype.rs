//! candle's dtypes (candle-core 0.11) and sets of them, as a contract names them.

use std::fmt;

/// One of candle's `DType` variants, named as in Rust (`u32`, `bf16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    /// `DType::U8`.
    U8,
    /// `DType::U32`.
    U32,
    /// `DType::I16`.
    I16,
    /// `DType::I32`.
    I32,
    /// `DType::I64`.
    I64,
    /// `DType::BF16`.
    BF16,
    /// `DType::F16`.
    F16,
    /// `DType::F32`.
    F32,
    /// `DType::F64`.
    F64,
    /// `DType::F8E4M3`.
    F8E4M3,
    /// `DType::F6E2M3`.
    F6E2M3,
    /// `DType::F6E3M2`.
    F6E3M2,
    /// `DType::F4`.
    F4,
    /// `DType::F8E8M0`.
    F8E8M0,
}

impl DType {
    /// Every dtype of candle 0.11, in candle's order.
    pub const ALL: [DType; 14] = [
        DType::U8,
        DType::U32,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::BF16,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
        DType::F6E2M3,
        DType::F6E3M2,
        DType::F4,
        DType::F8E8M0,
    ];

    /// The name a contract uses (`u32`), which is also candle's `DType::as_str`.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F6E2M3 => "f6e2m3",
            DType::F6E3M2 => "f6e3m2",
            DType::F4 => "f4",
            DType::F8E8M0 => "f8e8m0",
        }
    }

    /// The dtype a contract name stands for; `None` for a family or an unknown name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|dtype| dtype.name() == name)
    }

    /// Whether candle counts it a float dtype (`DType::is_float`).
    pub fn is_float(self) -> bool {
        !self.is_int()
    }

    /// Whether candle counts it an integer dtype (`DType::is_int`).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::U32 | DType::I16 | DType::I32 | DType::I64
        )
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// How its values are stored: unsigned, signed or float.
    pub fn kind(self) -> Kind {
        match self {
            DType::U8 | DType::U32 => Kind::Unsigned,
            DType::I16 | DType::I32 | DType::I64 => Kind::Signed,
            _ => Kind::Float,
        }
    }

    /// The name of its constant in the runtime's `DTypeSet` (`U32`, `BF16`), which generated
    /// code names.
    pub fn constant(self) -> &'static str {
        match self {
            DType::U8 => "U8",
            DType::U32 => "U32",
            DType::I16 => "I16",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::BF16 => "BF16",
            DType::F16 => "F16",
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::F8E4M3 => "F8E4M3",
            DType::F6E2M3 => "F6E2M3",
            DType::F6E3M2 => "F6E3M2",
            DType::F4 => "F4",
            DType::F8E8M0 => "F8E8M0",
        }
    }

    /// An integer dtype's values, inclusive: `(0, 255)` for `u8`; `None` for a float.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::U8 => (0, u8::MAX.into()),
            DType::U32 => (0, u32::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::I64 => (i64::MIN.into(), i64::MAX.into()),
            _ => return None,
        })
    }

    /// A float dtype's largest finite magnitude (`65504` for `f16`); `None` for an integer.
    pub fn float_max(self) -> Option<f64> {
        Some(match self {
            DType::BF16 => 3.389_531_389_251_535_5e38,
            DType::F16 => 65504.0,
            DType::F32 => f32::MAX as f64,
            DType::F64 => f64::MAX,
            DType::F8E4M3 => 448.0,
            DType::F6E2M3 => 7.5,
            DType::F6E3M2 => 28.0,
            DType::F4 => 6.0,
            DType::F8E8M0 => 1.701_411_834_604_692_3e38,
            _ => return None,
        })
    }

    /// Whether it has ±inf (the IEEE floats; not the packed f8/f6/f4 formats).
    pub fn has_inf(self) -> bool {
        matches!(self, DType::BF16 | DType::F16 | DType::F32 | DType::F64)
    }

    /// Whether it has negative values (`f8e8m0`, a power of two, has none).
    pub fn has_negative(self) -> bool {
        !matches!(self, DType::U8 | DType::U32 | DType::F8E8M0)
    }

    /// Whether this float dtype holds `value` exactly (`value` a finite f64). The packed
    /// formats, which candle cannot read, are taken to hold everything: nothing is refused on
    /// their account. An integer dtype holds what lies in its range.
    pub fn holds_exactly(self, value: f64) -> bool {
        // (significand bits with the implicit one, smallest normal exponent)
        let (precision, min_exponent) = match self {
            DType::F64 => return true,
            DType::F32 => return f64::from(value as f32) == value,
            DType::BF16 => (8, -126),
            DType::F16 => (11, -14),
            DType::F8E4M3 => (4, -6),
            DType::F8E8M0 => {
                let (mantissa, exponent) = significand(value.abs());
                return value > 0.0 && mantissa == 1 && (-127..=127).contains(&exponent);
            }
            _ if self.is_int() => return self.can_hold(Some(value), Some(value), true),
            _ => return true,
        };
        if value == 0.0 {
            return true;
        }
        if self.float_max().is_some_and(|max| value.abs() > max) {
            return false;
        }
        let (mantissa, exponent) = significand(value.abs());
        let bits = 64 - mantissa.leading_zeros() as i32;
        let leading = exponent + bits - 1;
        if leading >= min_exponent {
            bits <= precision
        } else {
            // A subnormal: its lowest bit is no finer than the format's.
            exponent >= min_exponent - (precision - 1)
        }
    }

    /// Whether some value of this dtype lies in `[lo, hi]` (bounds as reals; `None` is open;
    /// `hi` excluded unless `hi_inclusive`).
    pub fn can_hold(self, lo: Option<f64>, hi: Option<f64>, hi_inclusive: bool) -> bool {
        if self.has_inf() {
            return true;
        }
        let (min, max) = self.value_range();
        let above_min = hi.is_none_or(|hi| if hi_inclusive { hi >= min } else { hi > min });
        let below_max = lo.is_none_or(|lo| lo <= max);
        above_min && below_max
    }

    /// Its finite values as a range, as messages write it: `0..=255`, `-65504..=65504`.
    pub fn describe_range(self) -> String {
        match self.int_range() {
            Some((min, max)) => format!("{min}..={max}"),
            None => {
                let (min, max) = self.value_range();
                format!("{min}..={max}")
            }
        }
    }

    /// The smallest and the largest finite value, as f64s.
    fn value_range(self) -> (f64, f64) {
        match (self.int_range(), self.float_max()) {
            (Some((min, max)), _) => (min as f64, max as f64),
            (None, Some(max)) if self.has_negative() => (-max, max),
            (None, Some(max)) => (0.0, max),
            (None, None) => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }
}

/// How a dtype's values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `u8`, `u32`.
    Unsigned,
    /// `i16`, `i32`, `i64`.
    Signed,
    /// Every float format.
    Float,
}

/// A positive finite `value` as `mantissa * 2^exponent` with an odd mantissa.
fn significand(value: f64) -> (u64, i32) {
    let bits = value.to_bits();
    let raw_exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mut mantissa, mut exponent) = if raw_exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), raw_exponent - 1075)
    };
    if mantissa == 0 {
        return (0, 0);
    }
    let zeros = mantissa.trailing_zeros();
    mantissa >>= zeros;
    exponent += zeros as i32;
    (mantissa, exponent)
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dtypes a tensor may have: one (`f32`), a union (`u8 | u32 | i64`), a family (`float`)
/// or any (`_`, which is also what an unknown tensor has).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DTypeSet(u16);

impl DTypeSet {
    /// No dtype: what two disjoint sets have in common.
    pub const EMPTY: DTypeSet = DTypeSet(0);
    /// Every dtype (`_`).
    pub const ANY: DTypeSet = DTypeSet((1 << 14) - 1);
    /// The float dtypes (`float`).
    pub const FLOAT: DTypeSet = DTypeSet(0b11_1111_1110_0000);
    /// The integer dtypes (`int`).
    pub const INT: DTypeSet = DTypeSet(0b1_1111);
    /// The unsigned integer dtypes (`uint`: u8, u32).
    pub const UINT: DTypeSet = DTypeSet(0b11);
    /// The signed integer dtypes (`sint`: i16, i32, i64).
    pub const SINT: DTypeSet = DTypeSet(0b1_1100);
    /// The dtypes candle's indexing ops take as ids (`u8 | u32 | i64`).
    pub const INDEX: DTypeSet = DTypeSet(0b1_0011);

    /// The set holding one dtype.
    pub fn only(dtype: DType) -> DTypeSet {
        DTypeSet(dtype.bit())
    }

    /// The families a contract may name: each name, its set, and its constant in the
    /// runtime's `DTypeSet`.
    pub const FAMILIES: [(&'static str, DTypeSet, &'static str); 5] = [
        ("float", DTypeSet::FLOAT, "FLOAT"),
        ("int", DTypeSet::INT, "INT"),
        ("uint", DTypeSet::UINT, "UINT"),
        ("sint", DTypeSet::SINT, "SINT"),
        ("_", DTypeSet::ANY, "ANY"),
    ];

    /// Every name a contract may use for dtypes: candle's dtypes, then the families.
    pub fn names() -> impl Iterator<Item = &'static str> {
        DType::ALL
            .into_iter()
            .map(DType::name)
            .chain(DTypeSet::FAMILIES.iter().map(|(name, _, _)| *name))
    }

    /// The runtime's `DTypeSet` constant a contract name stands for (`U32`, `FLOAT`).
    pub fn constant(name: &str) -> Option<&'static str> {
        match DType::from_name(name) {
            Some(dtype) => Some(dtype.constant()),
            None => DTypeSet::FAMILIES
                .iter()
                .find(|(family, _, _)| *family == name)
                .map(|(_, _, constant)| *constant),
        }
    }

    /// The set a contract name stands for: a dtype (`f32`) or a family (`float`, `int`,
    /// `uint`, `sint`, `_`).
    pub fn from_name(name: &str) -> Option<DTypeSet> {
        match DTypeSet::FAMILIES
            .iter()
            .find(|(family, _, _)| *family == name)
        {
            Some((_, set, _)) => Some(*set),
            None => DType::from_name(name).map(DTypeSet::only),
        }
    }

    /// Both sets' dtypes.
    pub fn union(self, other: DTypeSet) -> DTypeSet {
        DTypeSet(self.0 | other.0)
    }

    /// The dtypes in both sets.
    pub fn intersection(self, other: DTypeSet) -> DTypeSet {
        DTypeSet(self.0 & other.0)
    }

    /// Whether `dtype` is in the set.
    pub fn contains(self, dtype: DType) -> bool {
        self.0 & dtype.bit() != 0
    }

    /// Whether the set has no dtype.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every dtype is in the set (nothing is known about the dtype).
    pub fn is_any(self) -> bool {
        self == DTypeSet::ANY
    }

    /// The one dtype of a singleton set.
    pub fn single(self) -> Option<DType> {
        let mut members = self.iter();
        match (members.next(), members.next()) {
            (Some(dtype), None) => Some(dtype),
            _ => None,
        }
    }

    /// The dtypes of the set, in candle's order.
    pub fn iter(self) -> impl Iterator<Item = DType> {
        DType::ALL
            .into_iter()
            .filter(move |dtype| self.contains(*dtype))
    }
}

impl From<DType> for DTypeSet {
    fn from(dtype: DType) -> Self {
        DTypeSet::only(dtype)
    }
}

impl fmt::Display for DTypeSet {
    /// As a contract writes it: `f32`, `u8 | u32 | i64`, `float`, `_`; an empty set is `!`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let family = [
            (DTypeSet::ANY, "_"),
            (DTypeSet::FLOAT, "float"),
            (DTypeSet::INT, "int"),
            (DTypeSet::UINT, "uint"),
            (DTypeSet::SINT, "sint"),
        ]
        .into_iter()
        .find(|(set, _)| set == self);
        if let Some((_, name)) = family {
            return f.write_str(name);
        }
        if self.is_empty() {
            return f.write_str("!");
        }
        for (i, dtype) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            f.write_str(dtype.name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for DTypeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DTypeSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_table_gives_each_dtypes_range_and_constant() {
        for dtype in DType::ALL {
            assert_eq!(dtype.constant(), dtype.name().to_uppercase());
            assert_eq!(DTypeSet::constant(dtype.name()), Some(dtype.constant()));
            assert_eq!(dtype.int_range().is_some(), dtype.is_int());
            assert_eq!(dtype.float_max().is_some(), dtype.is_float());
            assert_eq!(dtype.kind() == Kind::Float, dtype.is_float());
        }
        assert_eq!(DTypeSet::constant("float"), Some("FLOAT"));
        assert_eq!(DTypeSet::constant("f33"), None);
        assert_eq!(DType::U8.describe_range(), "0..=255");
        assert_eq!(DType::F16.describe_range(), "-65504..=65504");
        assert_eq!(
            DType::F8E8M0.describe_range().split("..=").next(),
            Some("0")
        );
        // f16 has 11 significant bits: 2048 is exact, 2049 is not.
        assert!(DType::F16.holds_exactly(2048.0));
        assert!(!DType::F16.holds_exactly(2049.0));
        assert!(!DType::F32.holds_exactly(0.1));
        assert!(DType::F8E8M0.holds_exactly(0.5) && !DType::F8E8M0.holds_exactly(3.0));
        assert!(!DType::U8.can_hold(Some(256.0), None, true));
        assert!(!DType::U32.can_hold(None, Some(0.0), false));
        assert!(DType::U32.can_hold(None, Some(0.0), true));
        assert!(DType::F32.can_hold(Some(1e300), None, true), "f32 has inf");
        assert!(!DType::F4.can_hold(Some(7.0), None, true));
        let names: Vec<&str> = DTypeSet::names().collect();
        assert_eq!(names.len(), 19);
        assert!(names.contains(&"bf16") && names.contains(&"sint"));
    }

    #[test]
    fn families_hold_the_dtypes_candle_classifies_so() {
        for dtype in DType::ALL {
            assert_eq!(DTypeSet::FLOAT.contains(dtype), dtype.is_float(), "{dtype}");
            assert_eq!(DTypeSet::INT.contains(dtype), dtype.is_int(), "{dtype}");
            assert!(DTypeSet::ANY.contains(dtype));
        }
        assert_eq!(DTypeSet::UINT.union(DTypeSet::SINT), DTypeSet::INT);
        assert_eq!(DTypeSet::INDEX.to_string(), "u8 | u32 | i64");
    }

    #[test]
    fn sets_print_as_a_contract_writes_them() {
        assert_eq!(DTypeSet::from_name("float").unwrap().to_string(), "float");
        assert_eq!(DTypeSet::from_name("f32").unwrap().to_string(), "f32");
        let f32_f64 = DTypeSet::only(DType::F32).union(DType::F64.into());
        assert_eq!(f32_f64.to_string(), "f32 | f64");
        assert_eq!(f32_f64.intersection(DType::U32.into()), DTypeSet::EMPTY);
        assert_eq!(DTypeSet::from_name("flaot"), None);
    }
}
