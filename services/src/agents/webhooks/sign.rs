//! Signing a delivery as SOAT signs it, so SOAT's own `soat listen --secret` accepts
//! ours. Each attempt carries two headers:
//!
//! - `X-Soat-Signature-V2: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`:
//!   the timestamp is signed with the body, so a receiver bounds a replay by age;
//! - `X-Soat-Signature: sha256=<hex HMAC-SHA256(secret, body)>`: SOAT's older scheme,
//!   with no replay bound (sent for receivers that only know it).
//!
//! How a receiver verifies (docs/agents.md, Webhooks, says the same): read the raw body bytes
//! before parsing them; split the V2 header on `,` into `t` and `v1`; refuse when
//! either is missing, or when `t` is further than its tolerance (5 minutes) from its
//! own clock (stale: a replay); compute HMAC-SHA256 with the webhook's secret over
//! `t`, `.`, the body, hex it, and compare it to `v1` in constant time (forged when
//! they differ). Then dedupe on the event id (`X-Soat-Event-Id`, the body's `id`):
//! delivery is at-least-once. [`verify`] is that check, which the tests use.
//!
//! Signed per attempt, not per delivery: a retry that reused the first attempt's
//! timestamp would fall outside a receiver's window and read as a replay of itself.

use ring::hmac;

pub const HEADER_V2: &str = "x-soat-signature-v2";
pub const HEADER_LEGACY: &str = "x-soat-signature";
/// How far from its clock a receiver should accept a signature's timestamp.
pub const TOLERANCE_SECS: u64 = 300;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(secret: &str, parts: &[&[u8]]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = hmac::Context::with_key(&key);
    for p in parts {
        ctx.update(p);
    }
    hex(ctx.sign().as_ref())
}

/// The two headers' values for `body` signed at `t` (unix seconds): (V2, legacy).
pub fn headers(secret: &str, body: &[u8], t: u64) -> (String, String) {
    let ts = t.to_string();
    let v2 = format!("t={ts},v1={}", mac(secret, &[ts.as_bytes(), b".", body]));
    (v2, format!("sha256={}", mac(secret, &[body])))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// No `t` or no `v1`, or a `t` that is not a number.
    Malformed,
    /// `t` is further than the tolerance from `now`.
    Stale,
    /// The digest does not match.
    Forged,
}

/// A receiver's check of a V2 header against the raw body, at `now` (unix seconds).
pub fn verify(secret: &str, body: &[u8], header: &str, now: u64, tolerance: u64) -> Result<(), Rejected> {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v),
            Some(("v1", v)) => v1 = Some(v),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else { return Err(Rejected::Malformed) };
    let at: u64 = t.parse().map_err(|_| Rejected::Malformed)?;
    if at.abs_diff(now) > tolerance {
        return Err(Rejected::Stale);
    }
    let expected = mac(secret, &[t.as_bytes(), b".", body]);
    let same: bool = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), v1.as_bytes()).into();
    if same {
        Ok(())
    } else {
        Err(Rejected::Forged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_as_soat_does_and_verifies_only_fresh_unchanged_bodies() {
        // RFC 4231 test case 2 (key "Jefe"), through the legacy header's bare body.
        let (_, legacy) = headers("Jefe", b"what do ya want for nothing?", 0);
        assert_eq!(legacy, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        let body = br#"{"id":"evt_1","event":"agents.generation.completed"}"#;
        let (v2, _) = headers("whsec_x", body, 1_700_000_000);
        assert!(v2.starts_with("t=1700000000,v1="));
        assert_eq!(verify("whsec_x", body, &v2, 1_700_000_100, TOLERANCE_SECS), Ok(()));
        assert_eq!(verify("whsec_x", body, &v2, 1_700_000_000 + 301, TOLERANCE_SECS), Err(Rejected::Stale));
        assert_eq!(verify("whsec_y", body, &v2, 1_700_000_000, TOLERANCE_SECS), Err(Rejected::Forged));
        assert_eq!(verify("whsec_x", b"{}", &v2, 1_700_000_000, TOLERANCE_SECS), Err(Rejected::Forged));
        let moved = v2.replace("t=1700000000", "t=1700000001");
        assert_eq!(verify("whsec_x", body, &moved, 1_700_000_000, TOLERANCE_SECS), Err(Rejected::Forged), "the timestamp is signed");
        assert_eq!(verify("whsec_x", body, "v1=abc", 0, TOLERANCE_SECS), Err(Rejected::Malformed));
    }
}
