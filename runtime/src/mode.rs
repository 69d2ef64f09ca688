//! Which checks run: `full`, `shapes` or `off`, for the whole process.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// How much a guard checks. Set with [`set_mode`] or the environment variable
/// `CANDLE_CONTRACTS=full|shapes|off`, read once, at the first guarded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Everything: dtype, shape, device, relations and value rules (`in`, `ignore`, `finite`).
    /// The default, in debug and release builds alike.
    Full,
    /// Dtype, shape, device, relations and `contiguous`; no tensor data is read and nothing
    /// syncs with a device.
    Shapes,
    /// Nothing: a guard costs one relaxed atomic load (two with the `proptest` feature, whose
    /// probe for `arbitrary!` is asked first).
    Off,
}

impl Mode {
    fn as_u8(self) -> u8 {
        match self {
            Mode::Full => 0,
            Mode::Shapes => 1,
            Mode::Off => 2,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Full => "full",
            Mode::Shapes => "shapes",
            Mode::Off => "off",
        })
    }
}

/// The text was not `full`, `shapes` or `off`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseModeError(String);

impl fmt::Display for ParseModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown candle-contracts mode `{}`: expected `full`, `shapes` or `off`",
            self.0
        )
    }
}

impl std::error::Error for ParseModeError {}

impl FromStr for Mode {
    type Err = ParseModeError;

    /// Parses `full`, `shapes` or `off`, ignoring case and surrounding spaces.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Mode::Full),
            "shapes" => Ok(Mode::Shapes),
            "off" => Ok(Mode::Off),
            _ => Err(ParseModeError(text.to_string())),
        }
    }
}

/// The name of the environment variable read at the first guarded call.
pub const MODE_ENV_VAR: &str = "CANDLE_CONTRACTS";

const UNSET: u8 = u8::MAX;
static MODE: AtomicU8 = AtomicU8::new(UNSET);

/// Sets the mode for the whole process, overriding `CANDLE_CONTRACTS`. Takes effect at the next
/// guarded call on every thread.
pub fn set_mode(mode: Mode) {
    MODE.store(mode.as_u8(), Ordering::Relaxed);
}

/// The current mode: the last [`set_mode`], else `CANDLE_CONTRACTS`, else [`Mode::Full`].
///
/// An unreadable `CANDLE_CONTRACTS` value is reported once on standard error and treated as
/// `full`: a typo must not switch checks off.
#[inline]
pub fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        0 => Mode::Full,
        1 => Mode::Shapes,
        2 => Mode::Off,
        _ => mode_from_env(),
    }
}

#[cold]
#[inline(never)]
fn mode_from_env() -> Mode {
    let from_env = match std::env::var(MODE_ENV_VAR) {
        // `CANDLE_CONTRACTS=` (empty) is unset, as shells and CI files often leave it.
        Ok(text) if text.trim().is_empty() => Mode::Full,
        Ok(text) => text.parse::<Mode>().unwrap_or_else(|error| {
            eprintln!("{error} in {MODE_ENV_VAR}; using `full`");
            Mode::Full
        }),
        Err(_) => Mode::Full,
    };
    // A `set_mode` that raced with this read wins.
    match MODE.compare_exchange(
        UNSET,
        from_env.as_u8(),
        Ordering::Relaxed,
        Ordering::Relaxed,
    ) {
        Ok(_) => from_env,
        Err(_) => mode(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_modes() {
        assert_eq!("full".parse::<Mode>(), Ok(Mode::Full));
        assert_eq!(" Shapes ".parse::<Mode>(), Ok(Mode::Shapes));
        assert_eq!("OFF".parse::<Mode>(), Ok(Mode::Off));
        let error = "fast".parse::<Mode>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown candle-contracts mode `fast`: expected `full`, `shapes` or `off`"
        );
    }
}
