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

    /// The set a contract name stands for: a dtype (`f32`) or a family (`float`, `int`,
    /// `uint`, `sint`, `_`).
    pub fn from_name(name: &str) -> Option<DTypeSet> {
        match name {
            "float" => Some(DTypeSet::FLOAT),
            "int" => Some(DTypeSet::INT),
            "uint" => Some(DTypeSet::UINT),
            "sint" => Some(DTypeSet::SINT),
            "_" => Some(DTypeSet::ANY),
            _ => DType::from_name(name).map(DTypeSet::only),
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
