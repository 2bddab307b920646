//! `/upsert-file`'s body: `multipart/form-data` with a `file` part and optional
//! `metadata` (a JSON string) and `namespace` parts, read with `multer` from the body
//! already read whole (one chunk as its stream). Text and Markdown files are taken,
//! by their part's type or, for `application/octet-stream` or none, by the file
//! name's extension; anything else is refused naming its type.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::{ApiError, Code};

/// What the form carried.
#[derive(Debug)]
pub struct Form {
    pub text: String,
    pub format: &'static str,
    pub metadata: Map<String, Value>,
    pub namespace: Option<String>,
}

fn bad(field: &'static str, msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidDocument, msg).at(field)
}

pub async fn read(content_type: Option<&str>, body: Bytes) -> Result<Form, ApiError> {
    let boundary = content_type.and_then(|ct| multer::parse_boundary(ct).ok()).ok_or_else(|| {
        bad("file", format!("Send the file as multipart/form-data with a file part, not as {}.", content_type.unwrap_or("a body without a type")))
    })?;
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::convert::Infallible>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    let broken = |e: multer::Error| bad("file", format!("The multipart body could not be read: {e}."));
    let (mut file, mut metadata, mut namespace) = (None, None, None);
    while let Some(part) = parts.next_field().await.map_err(broken)? {
        match part.name() {
            Some("file") => {
                let kind = format(part.content_type().map(|m| m.essence_str().to_owned()), part.file_name())?;
                let bytes = part.bytes().await.map_err(broken)?;
                let text = String::from_utf8(bytes.to_vec())
                    .map_err(|e| bad("file", format!("The file is not UTF-8 text (byte {}).", e.utf8_error().valid_up_to())))?;
                file = Some((text, kind));
            }
            Some("metadata") => metadata = Some(part.text().await.map_err(broken)?),
            Some("namespace") => namespace = Some(part.text().await.map_err(broken)?),
            _ => {}
        }
    }
    let (text, format) = file.ok_or_else(|| bad("file", "file: field required"))?;
    Ok(Form { text, format, metadata: parse_metadata(metadata.as_deref())?, namespace })
}

/// The document format of a file part: by its type, or by its name when the type
/// says nothing.
fn format(content_type: Option<String>, file_name: Option<&str>) -> Result<&'static str, ApiError> {
    let ext = file_name.and_then(|n| n.rsplit_once('.')).map(|(_, e)| e.to_ascii_lowercase());
    match content_type.as_deref() {
        Some("text/plain") => Ok("text"),
        Some("text/markdown" | "text/x-markdown") => Ok("markdown"),
        None | Some("application/octet-stream") => match ext.as_deref() {
            Some("txt" | "text") => Ok("text"),
            Some("md" | "markdown") => Ok("markdown"),
            _ => Err(bad(
                "file",
                format!(
                    "The file {} has no type this server takes; send text/plain or text/markdown (.txt, .md).",
                    file_name.map_or_else(|| "without a name".to_owned(), |n| format!("\"{n}\""))
                ),
            )),
        },
        Some(other) => Err(bad("file", format!("Files of type {other} are not supported in this version; send text/plain or text/markdown."))),
    }
}

/// The `metadata` part: a JSON object (or `null`, or absent).
fn parse_metadata(text: Option<&str>) -> Result<Map<String, Value>, ApiError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else { return Ok(Map::new()) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(bad("metadata", "metadata must be a JSON object.")),
        Err(e) => Err(bad("metadata", format!("metadata is not valid JSON: {e}."))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form part: name, (file name, type) for a file, content.
    type Part<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a str);

    fn body(parts: &[Part]) -> Bytes {
        let mut b = String::new();
        for (name, file, content) in parts {
            b.push_str("--XyZ\r\n");
            match file {
                Some((fname, ct)) => {
                    b.push_str(&format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{fname}\"\r\nContent-Type: {ct}\r\n\r\n"))
                }
                None => b.push_str(&format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n")),
            }
            b.push_str(content);
            b.push_str("\r\n");
        }
        b.push_str("--XyZ--\r\n");
        Bytes::from(b)
    }

    fn read_now(parts: &[Part]) -> Result<Form, ApiError> {
        futures_lite::future::block_on(read(Some("multipart/form-data; boundary=XyZ"), body(parts)))
    }

    #[test]
    fn a_text_file_and_its_metadata_are_read() {
        let f = read_now(&[("file", Some(("a.md", "application/octet-stream")), "# T\n\nBody"), ("metadata", None, r#"{"author":"Ann"}"#)]).unwrap();
        assert_eq!((f.text.as_str(), f.format, f.metadata["author"].as_str()), ("# T\n\nBody", "markdown", Some("Ann")));
        assert_eq!(read_now(&[("file", Some(("a", "text/plain")), "x")]).unwrap().format, "text");
    }

    #[test]
    fn other_types_and_missing_parts_are_refused_by_name() {
        let e = read_now(&[("file", Some(("a.pdf", "application/pdf")), "%PDF")]).unwrap_err();
        assert!(e.message.contains("application/pdf") && e.field.as_deref() == Some("file"), "{}", e.message);
        let e = read_now(&[("file", Some(("a.docx", "application/octet-stream")), "x")]).unwrap_err();
        assert!(e.message.contains("a.docx"), "{}", e.message);
        assert_eq!(read_now(&[("metadata", None, "{}")]).unwrap_err().field.as_deref(), Some("file"));
        assert_eq!(
            read_now(&[("file", Some(("a.txt", "text/plain")), "x"), ("metadata", None, "[1]")]).unwrap_err().field.as_deref(),
            Some("metadata")
        );
        let e = futures_lite::future::block_on(read(Some("application/json"), Bytes::from_static(b"{}"))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("file"));
    }
}
