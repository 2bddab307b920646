//! The pieces the AgentLex bodies are made of: serde types whose refusals say what a
//! field must be in the spec's words ("must be a string or null, not a number."), parsed
//! with [`crate::http::body::json`], which puts the field's path in front.
//!
//! [`Leaf`] reads any value and keeps its scalars (a field's own check then matches on
//! it); [`Obj`], [`List`] and the [`Accept`] trait take an object or an array into a typed
//! value and refuse every other JSON type by name.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, value::MapAccessDeserializer, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::Code;
pub use crate::http::body::{refuse, refuse_as};
use crate::search::domain::Domain;

/// A JSON number as it was written: an integer, or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Unsigned(u64),
    Negative(i64),
    Float(f64),
}

/// A value as a field's check sees it: scalars and arrays kept, objects only named
/// (their contents skipped).
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    Null,
    Bool(bool),
    Num(Num),
    Str(String),
    Array(Vec<Leaf>),
    Object,
}

impl Leaf {
    /// The JSON type, for messages: "not {kind}".
    pub fn kind(&self) -> &'static str {
        match self {
            Leaf::Null => NULL,
            Leaf::Bool(_) => "a boolean",
            Leaf::Num(_) => NUMBER,
            Leaf::Str(_) => "a string",
            Leaf::Array(_) => "an array",
            Leaf::Object => "an object",
        }
    }

    /// A whole number given as an integer or as an integer-valued float (`2`, `2.0`,
    /// `2e0`: JSON does not tell them apart, and neither does the spec).
    pub fn whole(&self) -> Option<u64> {
        match self {
            Leaf::Num(Num::Unsigned(n)) => Some(*n),
            Leaf::Num(Num::Float(f)) if f.fract() == 0.0 && (0.0..=9.0e15).contains(f) => Some(*f as u64),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Leaf::Num(Num::Unsigned(n)) => Some(*n as f64),
            Leaf::Num(Num::Negative(n)) => Some(*n as f64),
            Leaf::Num(Num::Float(f)) => Some(*f),
            _ => None,
        }
    }
}

const NULL: &str = "null";
const NUMBER: &str = "a number";

impl<'de> Deserialize<'de> for Leaf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Leaf, D::Error> {
        d.deserialize_any(LeafVisitor)
    }
}

struct LeafVisitor;

impl<'de> Visitor<'de> for LeafVisitor {
    type Value = Leaf;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Leaf, E> {
        Ok(Leaf::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Leaf, E> {
        Ok(Leaf::Num(Num::Unsigned(n)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Leaf, E> {
        Ok(Leaf::Num(if n >= 0 { Num::Unsigned(n as u64) } else { Num::Negative(n) }))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Leaf, E> {
        Ok(Leaf::Num(Num::Float(n)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Leaf, E> {
        Ok(Leaf::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Leaf, E> {
        Ok(Leaf::Str(s))
    }
    fn visit_unit<E>(self) -> Result<Leaf, E> {
        Ok(Leaf::Null)
    }
    fn visit_none<E>(self) -> Result<Leaf, E> {
        Ok(Leaf::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Leaf, D::Error> {
        Leaf::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Leaf, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Leaf::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Leaf, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Leaf::Object)
    }
}

/// A value that takes some JSON types (an object, an array, a string) and refuses the
/// others with "must be {WANT}, not {kind}.".
pub trait Accept<'de>: Sized {
    /// What the value must be: "an object", "a string or an object with text".
    const WANT: &'static str;
    /// The code of its refusals; `None` is the body's own.
    const CODE: Option<Code> = None;

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        drop(map);
        Err(Self::wrong("an object"))
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        drop(seq);
        Err(Self::wrong("an array"))
    }
    fn str<E: de::Error>(s: &str) -> Result<Self, E> {
        let _ = s;
        Err(Self::wrong("a string"))
    }
    /// The refusal of a JSON type the value does not take.
    fn wrong<E: de::Error>(kind: &str) -> E {
        let message = format!("must be {}, not {kind}.", Self::WANT);
        match Self::CODE {
            Some(code) => refuse_as(code, message),
            None => refuse(message),
        }
    }
}

/// Deserializes an [`Accept`] value.
pub fn accept<'de, D: Deserializer<'de>, T: Accept<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(AcceptVisitor(PhantomData))
}

struct AcceptVisitor<T>(PhantomData<T>);

impl<'de, T: Accept<'de>> Visitor<'de> for AcceptVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::WANT)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Err(T::wrong("a boolean"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        Err(T::wrong(NUMBER))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Err(T::wrong(NUMBER))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Err(T::wrong(NUMBER))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::str(s)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(T::wrong(NULL))
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Err(T::wrong(NULL))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// The code an object's refusal ("must be an object, not …") carries: the body's own
/// unless the type names one.
pub trait Shape {
    const CODE: Option<Code> = None;
}

/// An object read into the derived struct `T`; any other JSON type is refused.
#[derive(Debug, Clone)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de> + Shape> Accept<'de> for Obj<T> {
    const WANT: &'static str = "an object";
    const CODE: Option<Code> = T::CODE;

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
    }
}

impl<'de, T: Deserialize<'de> + Shape> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

/// How a list of these is named when the list is not an array: "an array of strings".
pub trait Item {
    const LIST: &'static str = "an array";
}

impl<T> Item for Obj<T> {}

/// An array of `T`s, each checked by `T` under its index (`questions[3]`).
#[derive(Debug, Clone)]
pub struct List<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de> + Item> Accept<'de> for List<T> {
    const WANT: &'static str = T::LIST;

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(List(items))
    }
}

impl<'de, T: Deserialize<'de> + Item> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

/// For `#[serde(default, deserialize_with = "present")]`: absent is `None`, and a value
/// given, null included, goes to `T`'s own check (where plain `Option` would take null
/// for absent).
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Which domains a `domain` field takes (the spec's enum for that field) and the code
/// its refusal carries; the one parser is [`DomainIn`].
pub trait Domains {
    /// Whether `auto` (no domain: detection per document) is accepted.
    const AUTO: bool = false;
    const MEMBERS: &'static [Domain];
    const CODE: Option<Code> = Some(Code::InvalidDomain);
}

/// A `domain` field of the members `F` lists: `None` is `auto`.
pub struct DomainIn<F>(pub Option<Domain>, PhantomData<F>);

impl<'de, F: Domains> Deserialize<'de> for DomainIn<F> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let found = match Leaf::deserialize(d)? {
            Leaf::Str(s) if F::AUTO && s == "auto" => Some(None),
            Leaf::Str(s) => Domain::parse(&s).filter(|d| F::MEMBERS.contains(d)).map(Some),
            _ => None,
        };
        if let Some(domain) = found {
            return Ok(DomainIn(domain, PhantomData));
        }
        let auto = F::AUTO.then_some("auto");
        let names: Vec<&str> = auto.into_iter().chain(F::MEMBERS.iter().map(|d| d.as_str())).collect();
        let message = format_args!("must be one of {}.", names.join(", "));
        Err(match F::CODE {
            Some(code) => refuse_as(code, message),
            None => refuse(message),
        })
    }
}

/// A boolean field (`all`, `stream`): anything else is refused by its type.
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Bool(b) => Ok(Flag(b)),
            other => Err(refuse(format_args!("must be a boolean, not {}.", other.kind()))),
        }
    }
}

/// A string or null (null and absent are `None` through `Option`).
#[derive(Debug, Clone, PartialEq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => Ok(Text(s)),
            other => Err(refuse(format_args!("must be a string or null, not {}.", other.kind()))),
        }
    }
}

/// A whole number from `MIN` to `MAX` ("must be an integer from 1 to 50.").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Int<const MIN: u64, const MAX: u64>(pub u64);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)?.whole() {
            Some(n) if (MIN..=MAX).contains(&n) => Ok(Int(n)),
            _ => Err(refuse(format_args!("must be an integer from {MIN} to {MAX}."))),
        }
    }
}

impl<const MIN: u64, const MAX: u64> Int<MIN, MAX> {
    pub fn or(v: Option<Self>, default: usize) -> usize {
        v.map_or(default, |n| n.0 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body::json;

    #[derive(Deserialize, Debug)]
    struct Body {
        #[serde(default, deserialize_with = "present")]
        k: Option<Int<1, 50>>,
        title: Option<Text>,
        #[serde(default)]
        items: Option<List<Obj<Inner>>>,
    }

    #[derive(Deserialize, Debug)]
    struct Inner {
        #[serde(default, deserialize_with = "present")]
        n: Option<Int<0, 3>>,
    }
    impl Shape for Inner {}

    fn err(body: &str) -> (Code, String, Option<String>) {
        let e = json::<Body>(body.as_bytes(), Code::InvalidQuery).unwrap_err();
        (e.code, e.message, e.field.map(|f| f.into_owned()))
    }

    #[test]
    fn refusals_follow_the_path_of_their_field() {
        assert_eq!(err(r#"{"k": 0}"#), (Code::InvalidQuery, "k must be an integer from 1 to 50.".into(), Some("k".into())));
        assert_eq!(err(r#"{"k": null}"#).1, "k must be an integer from 1 to 50.");
        assert_eq!(err(r#"{"title": 3}"#).1, "title must be a string or null, not a number.");
        assert_eq!(err(r#"{"items": {}}"#).1, "items must be an array, not an object.");
        assert_eq!(err(r#"{"items": [{}, 2]}"#).1, "items[1] must be an object, not a number.");
        let (_, message, field) = err(r#"{"items": [{"n": 2}, {"n": 2.5}]}"#);
        assert_eq!((message.as_str(), field.as_deref()), ("items[1].n must be an integer from 0 to 3.", Some("items[1].n")));
    }

    #[test]
    fn whole_floats_are_integers_and_null_is_absent_where_plain_option() {
        let b = json::<Body>(br#"{"k": 2.0, "title": null, "items": [{"n": 3e0}]}"#, Code::InvalidQuery).unwrap();
        assert_eq!((b.k, b.title), (Some(Int(2)), None));
        assert_eq!(b.items.unwrap().0[0].0.n, Some(Int(3)));
        assert!(json::<Body>(br#"{"k": -1}"#, Code::InvalidQuery).is_err());
        assert!(json::<Body>(br#"{"k": 1e300}"#, Code::InvalidQuery).is_err());
    }
}
