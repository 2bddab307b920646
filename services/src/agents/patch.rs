//! [`Patch`]: a field of a partial update, which may be absent (leave it), `null`
//! (clear it, or restore its default) or a value (set it). The one such type: every
//! update body (the agents' records, an agent's config, AgentLex's collection settings)
//! reads its clearable fields as one, with `#[serde(default)]`; a stored rule that keeps
//! the three apart (an agent's step rules) writes one back with
//! `skip_serializing_if = "Patch::is_absent"`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Set(T),
}

impl<T> Patch<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    /// The value sent; `None` for absent and for null alike.
    pub fn value(self) -> Option<T> {
        match self {
            Patch::Set(v) => Some(v),
            Patch::Absent | Patch::Null => None,
        }
    }

    pub fn as_ref(&self) -> Patch<&T> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Set(v) => Patch::Set(v),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Set(v) => Patch::Set(f(v)),
        }
    }

    /// Sets `slot` to the field after the patch.
    pub fn apply_to(self, slot: &mut Option<T>) {
        *slot = self.apply(slot.take());
    }

    /// The field after the patch, given its value before.
    pub fn apply(self, current: Option<T>) -> Option<T> {
        match self {
            Patch::Absent => current,
            Patch::Null => None,
            Patch::Set(v) => Some(v),
        }
    }
}

/// A field marked `#[serde(default)]` reads as `Absent` when missing.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Patch<T>, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Set(v),
        })
    }
}

/// `null` for `Null`, the value for `Set`; `Absent` is meant to be skipped (see above),
/// and writes `null` if it is not.
impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Set(v) => v.serialize(s),
            Patch::Absent | Patch::Null => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Body {
        #[serde(default, skip_serializing_if = "Patch::is_absent")]
        name: Patch<String>,
    }

    #[test]
    fn absent_null_and_set_are_three_things() {
        let read = |s: &str| serde_json::from_str::<Body>(s).unwrap().name;
        assert_eq!(read("{}"), Patch::Absent);
        assert_eq!(read(r#"{"name": null}"#), Patch::Null);
        assert_eq!(read(r#"{"name": "a"}"#), Patch::Set("a".into()));
        assert_eq!(Patch::Absent.apply(Some(1)), Some(1));
        assert_eq!(Patch::<i32>::Null.apply(Some(1)), None);
        let mut slot = Some(1);
        Patch::Set(2).apply_to(&mut slot);
        assert_eq!((slot, Patch::Set(3).value(), Patch::<i32>::Null.value()), (Some(2), Some(3), None));
    }

    #[test]
    fn a_stored_patch_writes_back_what_was_read() {
        for text in [r#"{}"#, r#"{"name":null}"#, r#"{"name":"a"}"#] {
            let body: Body = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&body).unwrap(), text);
        }
    }
}
