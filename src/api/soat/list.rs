//! Lists on `/api/v1` (pagination.yaml): `limit` 1–100 (default 50, or the
//! module's own; above 100 it is clamped and the answer says the limit served; below 1
//! or not an integer, 400 `VALIDATION_FAILED`), `offset` ≥ 0 (default 0; negative or
//! not an integer, 400), answered as `{data, total, limit, offset}`.

use hyper::StatusCode;
use serde::Serialize;

use super::query;
use crate::agents::SoatError;
use crate::http::response::{self, Reply};

pub const MAX_LIMIT: u64 = 100;
pub const DEFAULT_LIMIT: u64 = 50;

/// Which slice of a list to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u64,
    pub offset: u64,
}

#[derive(Serialize)]
struct Listed<'a, T> {
    data: &'a [T],
    total: usize,
    limit: u64,
    offset: u64,
}

impl Page {
    /// `limit` and `offset` from a query string; `default_limit` when `limit` is absent.
    pub fn from_query(q: Option<&str>, default_limit: u64) -> Result<Page, SoatError> {
        let limit = match query::param(q, "limit") {
            None => default_limit,
            Some(v) => match v.parse::<i64>() {
                Ok(n) if n >= 1 => (n as u64).min(MAX_LIMIT),
                _ => return Err(SoatError::invalid("limit", format!("must be an integer of at least 1, not \"{v}\"."))),
            },
        };
        let offset = match query::param(q, "offset") {
            None => 0,
            Some(v) => v.parse::<u64>().map_err(|_| SoatError::invalid("offset", format!("must be an integer of at least 0, not \"{v}\".")))?,
        };
        Ok(Page { limit, offset })
    }

    /// The part of `all` this page holds.
    pub fn slice<'a, T>(&self, all: &'a [T]) -> &'a [T] {
        let start = usize::try_from(self.offset).unwrap_or(usize::MAX).min(all.len());
        let end = start.saturating_add(self.limit as usize).min(all.len());
        &all[start..end]
    }

    /// `{data, total, limit, offset}` for a page the store already cut, of `total` (200).
    pub fn reply_counted<T: Serialize>(&self, data: &[T], total: usize) -> Reply {
        response::json(StatusCode::OK, &Listed { data, total, limit: self.limit, offset: self.offset })
    }

    /// `{data, total, limit, offset}` for this page of `all` (200).
    pub fn reply<T: Serialize>(&self, all: &[T]) -> Reply {
        response::json(StatusCode::OK, &Listed { data: self.slice(all), total: all.len(), limit: self.limit, offset: self.offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_clamped_above_and_refused_below() {
        assert_eq!(Page::from_query(None, DEFAULT_LIMIT).unwrap(), Page { limit: 50, offset: 0 });
        assert_eq!(Page::from_query(None, 25).unwrap().limit, 25);
        assert_eq!(Page::from_query(Some("limit=1000&offset=3"), 50).unwrap(), Page { limit: 100, offset: 3 });
        for bad in ["limit=0", "limit=-1", "limit=1.5", "limit=ten", "limit=", "offset=-1", "offset=x", "offset=1.0"] {
            assert!(Page::from_query(Some(bad), 50).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_slices_what_it_covers() {
        let all: Vec<u32> = (0..10).collect();
        assert_eq!(Page { limit: 3, offset: 8 }.slice(&all), &[8, 9]);
        assert_eq!(Page { limit: 3, offset: 80 }.slice(&all), &[] as &[u32]);
        assert_eq!(Page { limit: 100, offset: 0 }.slice(&all).len(), 10);
    }
}
