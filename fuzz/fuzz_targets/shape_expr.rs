//! Fuzz target: shape expressions, and the conditions over them that a contract's `[kernel]`
//! requires, parse and evaluate to a value or an error for any text and any symbol values,
//! never an overflow panic, a division-by-zero panic, a stack overflow from deep nesting, a
//! hang or an unbounded allocation.
//!
//! Input layout: the first bytes pick the symbols' values (one byte each, from a table of
//! edge values), the rest is the expression as UTF-8 text.
#![no_main]

use engine::shape_expr::{Condition, Expr, ShapeExpr, Symbols};
use libfuzzer_sys::fuzz_target;

/// The symbols the engine's op signatures use most; an expression may name others, which
/// then evaluate to an "undefined symbol" error.
const NAMES: [&str; 6] = ["n", "k", "rows", "keys", "tile", "vocab"];

/// Values where checked arithmetic and the positivity checks have their edges.
const VALUES: [i64; 16] =
    [0, 1, -1, 2, 7, 64, 130, 1 << 32, -64, i32::MAX as i64, i64::MAX, i64::MAX - 1, i64::MIN, i64::MIN + 1, i64::MAX / 2 + 1, -(1 << 31)];

fuzz_target!(|data: &[u8]| {
    if data.len() < NAMES.len() {
        return;
    }
    let (picks, rest) = data.split_at(NAMES.len());
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let symbols: Symbols =
        NAMES.iter().zip(picks).map(|(name, pick)| (name.to_string(), VALUES[usize::from(*pick) % VALUES.len()])).collect();

    if let Ok(expr) = Expr::parse(text) {
        let _ = expr.symbols();
        let _ = expr.evaluate(&symbols);
    }
    if let Ok(shape) = ShapeExpr::parse(text) {
        let _ = shape.symbols();
        let _ = shape.evaluate(&symbols);
    }
    if let Ok(condition) = Condition::parse(text) {
        let _ = condition.symbols();
        let _ = condition.check(&symbols);
    }
});
