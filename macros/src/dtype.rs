//! candle's dtypes (0.11) and the families a contract may name, with the value ranges the
//! validator needs to reject impossible bounds.

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unsigned,
    Signed,
    Float,
}

pub struct DType {
    pub name: &'static str,
    /// The constant of `DTypeSet` in the runtime.
    pub constant: &'static str,
    pub kind: Kind,
    /// Integers: the inclusive value range.
    pub int_range: (i128, i128),
    /// Floats: the largest finite magnitude, whether ±inf exists, whether negatives exist.
    pub float_max: f64,
    pub has_inf: bool,
    pub has_negative: bool,
}

const fn int(name: &'static str, constant: &'static str, min: i128, max: i128) -> DType {
    DType {
        name,
        constant,
        kind: if min < 0 {
            Kind::Signed
        } else {
            Kind::Unsigned
        },
        int_range: (min, max),
        float_max: 0.0,
        has_inf: false,
        has_negative: min < 0,
    }
}

const fn float(
    name: &'static str,
    constant: &'static str,
    max: f64,
    has_inf: bool,
    has_negative: bool,
) -> DType {
    DType {
        name,
        constant,
        kind: Kind::Float,
        int_range: (0, 0),
        float_max: max,
        has_inf,
        has_negative,
    }
}

pub const DTYPES: &[DType] = &[
    int("u8", "U8", 0, u8::MAX as i128),
    int("u32", "U32", 0, u32::MAX as i128),
    int("i16", "I16", i16::MIN as i128, i16::MAX as i128),
    int("i32", "I32", i32::MIN as i128, i32::MAX as i128),
    int("i64", "I64", i64::MIN as i128, i64::MAX as i128),
    float("bf16", "BF16", 3.389_531_389_251_535_5e38, true, true),
    float("f16", "F16", 65504.0, true, true),
    float("f32", "F32", f32::MAX as f64, true, true),
    float("f64", "F64", f64::MAX, true, true),
    float("f8e4m3", "F8E4M3", 448.0, false, true),
    float("f6e2m3", "F6E2M3", 7.5, false, true),
    float("f6e3m2", "F6E3M2", 28.0, false, true),
    float("f4", "F4", 6.0, false, true),
    float("f8e8m0", "F8E8M0", 1.701_411_834_604_692_3e38, false, false),
];

pub const FAMILIES: &[(&str, &str)] = &[
    ("float", "FLOAT"),
    ("int", "INT"),
    ("uint", "UINT"),
    ("sint", "SINT"),
    ("_", "ANY"),
];

/// Every name a contract may use as a dtype.
pub fn names() -> impl Iterator<Item = &'static str> {
    DTYPES
        .iter()
        .map(|d| d.name)
        .chain(FAMILIES.iter().map(|(name, _)| *name))
}

/// The dtypes a name stands for, and the runtime constant to emit.
pub fn resolve(name: &str) -> Option<(Vec<&'static DType>, &'static str)> {
    if let Some(dtype) = DTYPES.iter().find(|d| d.name == name) {
        return Some((vec![dtype], dtype.constant));
    }
    let &(_, constant) = FAMILIES.iter().find(|(family, _)| *family == name)?;
    let members = DTYPES
        .iter()
        .filter(|d| match name {
            "float" => d.kind == Kind::Float,
            "int" => d.kind != Kind::Float,
            "uint" => d.kind == Kind::Unsigned,
            "sint" => d.kind == Kind::Signed,
            _ => true,
        })
        .collect();
    Some((members, constant))
}

impl DType {
    /// Whether this float dtype holds `value` exactly (`value` a finite f64). The packed
    /// formats, which candle cannot read, are taken to hold everything: nothing is refused on
    /// their account.
    pub fn holds_exactly(&self, value: f64) -> bool {
        // (significand bits with the implicit one, smallest normal exponent)
        let (precision, min_exponent) = match self.name {
            "f64" => return true,
            "f32" => return f64::from(value as f32) == value,
            "bf16" => (8, -126),
            "f16" => (11, -14),
            "f8e4m3" => (4, -6),
            "f8e8m0" => {
                let (mantissa, exponent) = significand(value.abs());
                return value > 0.0 && mantissa == 1 && (-127..=127).contains(&exponent);
            }
            _ => return true,
        };
        if value == 0.0 {
            return true;
        }
        if value.abs() > self.float_max {
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

    /// Whether some value of this dtype lies in `[lo, hi]` (bounds as reals; `None` is open).
    pub fn can_hold(&self, lo: Option<f64>, hi: Option<f64>, hi_inclusive: bool) -> bool {
        let (min, max) = match self.kind {
            Kind::Float if self.has_inf => return true,
            Kind::Float => (
                if self.has_negative {
                    -self.float_max
                } else {
                    0.0
                },
                self.float_max,
            ),
            _ => (self.int_range.0 as f64, self.int_range.1 as f64),
        };
        let above_min = hi.is_none_or(|hi| if hi_inclusive { hi >= min } else { hi > min });
        let below_max = lo.is_none_or(|lo| lo <= max);
        above_min && below_max
    }

    pub fn describe_range(&self) -> String {
        match self.kind {
            Kind::Float => format!(
                "{}..={}",
                if self.has_negative {
                    -self.float_max
                } else {
                    0.0
                },
                self.float_max
            ),
            _ => format!("{}..={}", self.int_range.0, self.int_range.1),
        }
    }
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
