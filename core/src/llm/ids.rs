//! Opaque ids for completions and tool calls: a prefix and 24 hex digits from a
//! per-thread generator seeded once from the OS. They need to be unique, not secret,
//! and minting one per request must not cost a syscall and a dozen allocations.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_le_bytes(b) | 1
}

/// xorshift64*: the next 64 bits of this thread's sequence.
fn next() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// `prefix` followed by 24 random hex digits.
pub fn hex_id(prefix: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(prefix.len() + 24);
    out.push_str(prefix);
    for (word, digits) in [(next(), 16), (next(), 8)] {
        for i in (0..digits).rev() {
            out.push(HEX[((word >> (i * 4)) & 0xf) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_prefix_24_hex_digits_and_differ() {
        let (a, b) = (hex_id("call_"), hex_id("call_"));
        assert_eq!(a.len(), 5 + 24);
        assert!(a.starts_with("call_") && a[5..].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
