//! Sealing a secret's value: ChaCha20-Poly1305 (ring's AEAD), a fresh random 96-bit
//! nonce per seal, and the secret's identity (account, project, id) as associated
//! data, so a sealed value copied onto another record does not open there.
//!
//! Why ChaCha20-Poly1305 through ring: ring is already in the build as rustls's crypto
//! provider (one audited implementation, no second crypto crate), and ChaCha20 is
//! constant-time in software on every CPU, where AES-GCM is only with AES-NI.
//! Random nonces are safe far past the number of writes a server makes under one key
//! (the bound is about 2^32 seals).

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};

use super::key::KeyBytes;
use crate::llm::secret::Secret;

/// Format tag written before the hex, so a later scheme can sit beside this one.
const V1: &str = "v1:";

pub struct Sealer {
    key: LessSafeKey,
}

/// Who a sealed value belongs to; bound into the seal.
pub struct Owner<'a> {
    pub account_id: &'a str,
    pub project_id: &'a str,
    pub secret_id: &'a str,
}

impl Owner<'_> {
    fn aad(&self) -> Vec<u8> {
        format!("quarry-secret\0{}\0{}\0{}", self.account_id, self.project_id, self.secret_id).into_bytes()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the stored value does not open with this server's secrets key")]
pub struct Unopenable;

impl Sealer {
    pub fn new(key: &KeyBytes) -> Sealer {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &key.0).expect("a 32-byte key fits ChaCha20-Poly1305");
        Sealer { key: LessSafeKey::new(unbound) }
    }

    pub fn seal(&self, owner: &Owner<'_>, value: &Secret) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the OS random source is available");
        let mut buf = value.expose().as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(owner.aad()), &mut buf)
            .expect("a secret's value is far below ChaCha20's limit");
        let mut out = String::with_capacity(V1.len() + 2 * (NONCE_LEN + buf.len()));
        out.push_str(V1);
        for b in nonce.iter().chain(&buf) {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    pub fn open(&self, owner: &Owner<'_>, sealed: &str) -> Result<Secret, Unopenable> {
        let hex = sealed.strip_prefix(V1).ok_or(Unopenable)?;
        let mut bytes = unhex(hex).ok_or(Unopenable)?;
        if bytes.len() < NONCE_LEN {
            return Err(Unopenable);
        }
        let mut body = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| Unopenable)?;
        let plain = self.key.open_in_place(nonce, Aad::from(owner.aad()), &mut body).map_err(|_| Unopenable)?;
        String::from_utf8(plain.to_vec()).map(Secret::new).map_err(|_| Unopenable)
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes().chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(id: &str) -> Owner<'_> {
        Owner { account_id: "acct_1", project_id: "proj_1", secret_id: id }
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_owner() {
        let s = Sealer::new(&KeyBytes([7; 32]));
        let sealed = s.seal(&owner("sec_a"), &Secret::new("hunter2-value"));
        assert!(!sealed.contains("hunter2"));
        assert_ne!(sealed, s.seal(&owner("sec_a"), &Secret::new("hunter2-value")), "each seal has its own nonce");
        assert_eq!(s.open(&owner("sec_a"), &sealed).unwrap().expose(), "hunter2-value");
        assert!(s.open(&owner("sec_b"), &sealed).is_err(), "another record's seal does not open here");
        assert!(Sealer::new(&KeyBytes([8; 32])).open(&owner("sec_a"), &sealed).is_err(), "another key does not open it");
        let mut tampered = sealed.clone();
        let last = tampered.pop().unwrap();
        tampered.push(if last == '0' { '1' } else { '0' });
        assert!(s.open(&owner("sec_a"), &tampered).is_err(), "a changed byte fails the tag");
        assert!(s.open(&owner("sec_a"), "v1:zz").is_err());
        assert!(s.open(&owner("sec_a"), "v1:00").is_err());
    }
}
