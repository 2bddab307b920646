//! API keys: `al_` + 43 base62 characters drawn from the OS CSPRNG (256 bits).
//! A key is shown once; the store keeps its first 10 characters (the prefix, which
//! identifies it) and the SHA-256 of the whole key (which verifies it, compared in
//! constant time). SHA-256 without a salt or stretching suits keys this random: there
//! is nothing to guess.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const KEY_PREFIX: &str = "al_";
/// Project-scoped keys (SOAT's `sk_…`, `/api/v1`): the same shape after their own prefix.
pub const PROJECT_KEY_PREFIX: &str = "sk_";
/// SOAT users' login tokens (`POST /api/v1/users/login`): the same shape after their own
/// prefix, accepted on `/api/v1` only.
pub const USER_TOKEN_PREFIX: &str = "ut_";
/// Characters after `al_`: 43 × log2(62) ≈ 256 bits.
const RANDOM_CHARS: usize = 43;
/// The public part that names a key: its first 10 characters.
pub const PREFIX_LEN: usize = 10;
#[cfg(test)]
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A freshly issued key. `secret` is shown to the caller once and never stored.
pub struct IssuedKey {
    pub secret: String,
    pub prefix: String,
    pub hash: String,
}

pub fn issue() -> IssuedKey {
    issue_with(KEY_PREFIX)
}

/// A project-scoped key (`sk_…`).
pub fn issue_project() -> IssuedKey {
    issue_with(PROJECT_KEY_PREFIX)
}

/// A user's login token (`ut_…`).
pub fn issue_user_token() -> IssuedKey {
    issue_with(USER_TOKEN_PREFIX)
}

fn issue_with(kind: &str) -> IssuedKey {
    let secret = format!("{kind}{}", random_base62(RANDOM_CHARS));
    let prefix = secret[..PREFIX_LEN].to_owned();
    let hash = hex(&digest(&secret));
    IssuedKey { secret, prefix, hash }
}

use crate::ids::random_base62;

pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The prefix of a presented account key (`al_…`) when it has the shape of one of ours.
pub fn prefix_of(secret: &str) -> Option<&str> {
    prefix_with(secret, KEY_PREFIX)
}

/// The prefix of a presented project key (`sk_…`) when it has the shape of one.
pub fn project_prefix_of(secret: &str) -> Option<&str> {
    prefix_with(secret, PROJECT_KEY_PREFIX)
}

/// The prefix of a presented login token (`ut_…`) when it has the shape of one.
pub fn user_token_prefix_of(secret: &str) -> Option<&str> {
    prefix_with(secret, USER_TOKEN_PREFIX)
}

fn prefix_with<'a>(secret: &'a str, kind: &str) -> Option<&'a str> {
    let well_formed =
        secret.len() == kind.len() + RANDOM_CHARS && secret.starts_with(kind) && secret.bytes().skip(kind.len()).all(|b| b.is_ascii_alphanumeric());
    well_formed.then(|| &secret[..PREFIX_LEN])
}

/// Whether `presented` hashes to `stored`, in time that does not depend on where they differ.
pub fn verify(stored: &[u8; 32], presented: &[u8; 32]) -> bool {
    stored.ct_eq(presented).into()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex32(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in text.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_keys_have_the_documented_shape() {
        let k = issue();
        assert_eq!(k.secret.len(), 46);
        assert_eq!(prefix_of(&k.secret), Some(k.prefix.as_str()));
        assert_eq!(k.prefix.len(), PREFIX_LEN);
        assert_eq!(unhex32(&k.hash), Some(digest(&k.secret)));
        assert_ne!(issue().secret, k.secret);
    }

    #[test]
    fn project_keys_are_their_own_kind() {
        let k = issue_project();
        assert!(k.secret.starts_with("sk_") && k.secret.len() == 46);
        assert_eq!(project_prefix_of(&k.secret), Some(k.prefix.as_str()));
        assert_eq!(prefix_of(&k.secret), None, "an sk_ key is no al_ key");
        assert_eq!(project_prefix_of(&issue().secret), None);
    }

    #[test]
    fn malformed_keys_have_no_prefix() {
        assert_eq!(prefix_of("al_short"), None);
        assert_eq!(prefix_of(&format!("xx_{}", "a".repeat(43))), None);
        assert_eq!(prefix_of(&format!("al_{}!", "a".repeat(42))), None);
    }

    #[test]
    fn verify_tells_equal_from_unequal() {
        let a = digest("a");
        assert!(verify(&a, &digest("a")));
        assert!(!verify(&a, &digest("b")));
    }

    #[test]
    fn base62_is_roughly_uniform() {
        let text = random_base62(62 * 400);
        let mut counts = [0u32; 128];
        text.bytes().for_each(|b| counts[b as usize] += 1);
        for &c in ALPHABET {
            let n = counts[c as usize];
            assert!((250..=560).contains(&n), "{} drawn {n} times", c as char);
        }
    }
}
