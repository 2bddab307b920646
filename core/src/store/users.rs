//! SOAT users (`/api/v1/users`): people who log in with a username and password and act
//! for an account. A user is a kind on the generic account-owned table ([`Owned`]);
//! beside it, three small tables of its own: usernames (one appliance-wide namespace,
//! since login names no account), login tokens by their secret's prefix (with each
//! user's tokens, so deleting a user ends them in the same transaction), and the
//! bootstrap mark (set once, by the first admin, never cleared: a later bootstrap is
//! refused even when every user has since been deleted).

use serde::{Deserialize, Serialize};

use super::kv::{Names, Read, Rows, Sets, Table, WriteTx};
use super::owned::{get_in, insert_in, owned_record, remove_in};
use super::{get_json, to_json, AccountRecord, Charge, Records, StoreError};

/// Username → user id, over the whole appliance.
const USERNAMES: Names = Names("soat_usernames");
/// A login token's prefix → its record.
const TOKENS: Rows = Rows("soat_user_tokens");
/// User id → the prefixes of its tokens.
const USER_TOKENS: Sets = Sets("soat_user_tokens_by_user");
/// `first_admin` → the bootstrap user's id, once.
const BOOTSTRAP: Names = Names("soat_bootstrap");
const BOOTSTRAP_KEY: &str = "first_admin";

/// A user (`user_…`). The password is kept only as its argon2id PHC string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRecord {
    pub id: String,
    pub account_id: String,
    pub username: String,
    /// `admin` or `user`.
    pub role: String,
    pub password_hash: String,
    /// What `PUT /users/{id}/policies` attached (checked by `agents::policies`).
    #[serde(default)]
    pub policy_ids: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(UserRecord, "soat_users", "soat_users_by_account");

/// A login token: found by its secret's first characters, verified by the SHA-256 of
/// the whole secret, good until `expires_at` (unix seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTokenRecord {
    pub prefix: String,
    /// SHA-256 of the whole secret, hex.
    pub hash: String,
    pub user_id: String,
    pub account_id: String,
    pub expires_at: u64,
    pub created_at: String,
}

impl Records {
    /// Creates the users' tables (at start-up, with the others).
    pub(super) fn ensure_users(&self) -> Result<(), StoreError> {
        self.ensure::<UserRecord>()?;
        let txn = self.kv.write()?;
        for t in [Table::Names(USERNAMES), Table::Rows(TOKENS), Table::Sets(USER_TOKENS), Table::Names(BOOTSTRAP)] {
            txn.create(t)?;
        }
        txn.commit()
    }

    /// The appliance's first admin, with the new account it administers, in one
    /// transaction: `Ok(false)`, nothing written, once a bootstrap has happened (or the
    /// username is taken).
    pub fn bootstrap_user(&self, account: &AccountRecord, user: &UserRecord) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        if txn.name(BOOTSTRAP, BOOTSTRAP_KEY)?.is_some() || txn.name(USERNAMES, &user.username)?.is_some() {
            return Ok(false);
        }
        if txn.name(super::EMAILS, &account.email)?.is_some() {
            return Err(StoreError::Conflict { what: format!("an account for {}", account.email) });
        }
        txn.put_name(super::EMAILS, &account.email, &account.id)?;
        txn.put_row(super::ACCOUNTS, &account.id, &to_json(account))?;
        txn.put_name(BOOTSTRAP, BOOTSTRAP_KEY, &user.id)?;
        put_user_in(&txn, user)?;
        self.commit_charged(txn, Charge::Counted(&account.id))?;
        Ok(true)
    }

    /// Adds a user; `Conflict` when its username is taken anywhere on the appliance.
    pub fn insert_user(&self, user: &UserRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if txn.name(USERNAMES, &user.username)?.is_some() {
            return Err(StoreError::Conflict { what: format!("the username {}", user.username) });
        }
        put_user_in(&txn, user)?;
        self.commit_charged(txn, Charge::Capped(&user.account_id))
    }

    /// The user a username names, of whichever account.
    pub fn user_by_username(&self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        let txn = self.kv.read()?;
        let Some(id) = txn.name(USERNAMES, username)? else { return Ok(None) };
        get_json(&txn, super::owned::records::<UserRecord>(), &id, <UserRecord as super::owned::Owned>::TABLE)
    }

    /// Removes the account's user with its username and every token it holds; whether
    /// the account had it.
    pub fn remove_user(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let Some(user) = get_in::<UserRecord>(&txn, account_id, id)? else { return Ok(false) };
        for prefix in txn.members(USER_TOKENS, id)? {
            txn.delete_row(TOKENS, &prefix)?;
            txn.remove_member(USER_TOKENS, id, &prefix)?;
        }
        txn.delete_name(USERNAMES, &user.username)?;
        remove_in::<UserRecord>(&txn, account_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }

    /// Adds a login token, drawing another from `next` while the prefix is taken; `None`
    /// (nothing written) when its user is gone meanwhile.
    pub fn insert_user_token(&self, next: &mut dyn FnMut() -> UserTokenRecord) -> Result<Option<UserTokenRecord>, StoreError> {
        let txn = self.kv.write()?;
        let token = loop {
            let t = next();
            if txn.row(TOKENS, &t.prefix)?.is_none() {
                break t;
            }
        };
        if get_in::<UserRecord>(&txn, &token.account_id, &token.user_id)?.is_none() {
            return Ok(None);
        }
        // Expired tokens of the user go as a new one comes, so they do not pile up.
        for prefix in txn.members(USER_TOKENS, &token.user_id)? {
            let old: Option<UserTokenRecord> = get_json(&txn, TOKENS, &prefix, "user token")?;
            if old.is_none_or(|o| o.expires_at <= token_now()) {
                txn.delete_row(TOKENS, &prefix)?;
                txn.remove_member(USER_TOKENS, &token.user_id, &prefix)?;
            }
        }
        txn.put_row(TOKENS, &token.prefix, &to_json(&token))?;
        txn.add_member(USER_TOKENS, &token.user_id, &token.prefix)?;
        self.commit_charged(txn, Charge::Counted(&token.account_id))?;
        Ok(Some(token))
    }

    /// The login token a presented secret's prefix names, with its user (authentication's
    /// lookup); `None` when either is gone.
    pub fn user_token(&self, prefix: &str) -> Result<Option<(UserTokenRecord, UserRecord)>, StoreError> {
        let txn = self.kv.read()?;
        let Some(token) = get_json::<UserTokenRecord>(&txn, TOKENS, prefix, "user token")? else { return Ok(None) };
        let user = get_in::<UserRecord>(&txn, &token.account_id, &token.user_id)?;
        Ok(user.map(|u| (token, u)))
    }
}

fn put_user_in(txn: &WriteTx, user: &UserRecord) -> Result<(), StoreError> {
    txn.put_name(USERNAMES, &user.username, &user.id)?;
    insert_in(txn, user)
}

fn token_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: &str, account: &str, name: &str) -> UserRecord {
        UserRecord {
            id: id.into(),
            account_id: account.into(),
            username: name.into(),
            role: "admin".into(),
            password_hash: "h".into(),
            policy_ids: vec![],
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    fn account(id: &str) -> AccountRecord {
        AccountRecord { id: id.into(), email: format!("{id}@users.invalid"), plan: "free".into(), created_at: "t".into() }
    }

    fn token(prefix: &str, user: &str, account: &str) -> UserTokenRecord {
        UserTokenRecord {
            prefix: prefix.into(),
            hash: "h".into(),
            user_id: user.into(),
            account_id: account.into(),
            expires_at: u64::MAX,
            created_at: "t".into(),
        }
    }

    #[test]
    fn bootstrap_happens_once_even_after_its_user_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        assert!(r.bootstrap_user(&account("acct_a"), &user("user_1", "acct_a", "admin")).unwrap());
        assert!(r.account("acct_a").unwrap().is_some());
        assert!(!r.bootstrap_user(&account("acct_b"), &user("user_2", "acct_b", "other")).unwrap());
        assert!(r.account("acct_b").unwrap().is_none(), "a refused bootstrap writes nothing");
        assert!(r.remove_user("acct_a", "user_1").unwrap());
        assert!(!r.bootstrap_user(&account("acct_c"), &user("user_3", "acct_c", "admin")).unwrap());
    }

    #[test]
    fn usernames_are_one_namespace_and_tokens_go_with_their_user() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        r.insert_user(&user("user_1", "acct_a", "ann")).unwrap();
        assert!(matches!(r.insert_user(&user("user_2", "acct_b", "ann")), Err(StoreError::Conflict { .. })));
        assert_eq!(r.user_by_username("ann").unwrap().unwrap().id, "user_1");
        let mut drawn = vec![token("ut_bbbbbbb", "user_1", "acct_a"), token("ut_aaaaaaa", "user_1", "acct_a")];
        r.insert_user_token(&mut || drawn.pop().unwrap()).unwrap().unwrap();
        let mut taken = vec![token("ut_bbbbbbb", "user_1", "acct_a"), token("ut_aaaaaaa", "user_1", "acct_a")];
        assert_eq!(r.insert_user_token(&mut || taken.pop().unwrap()).unwrap().unwrap().prefix, "ut_bbbbbbb", "a taken prefix is drawn again");
        assert_eq!(r.user_token("ut_aaaaaaa").unwrap().unwrap().1.id, "user_1");
        assert!(!r.remove_user("acct_b", "user_1").unwrap(), "another account cannot remove it");
        assert!(r.remove_user("acct_a", "user_1").unwrap());
        assert_eq!(r.user_token("ut_aaaaaaa").unwrap(), None);
        assert_eq!(r.user_token("ut_bbbbbbb").unwrap(), None);
        assert_eq!(r.user_by_username("ann").unwrap(), None, "the name is free again");
        assert_eq!(r.insert_user_token(&mut || token("ut_ccccccc", "user_1", "acct_a")).unwrap(), None, "no token for a deleted user");
    }
}
