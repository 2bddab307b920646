//! One HTTP request as a scenario describes it, and its wire form. Requests are serialized
//! once before the run, so the hot loop only copies prepared bytes into the socket.

/// A request before serialization: what a scenario line (`{"method","path","headers","body"}`)
/// or the command line describes.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

pub(crate) fn default_method() -> String {
    "GET".to_string()
}

/// A request ready for the wire. `expects_body` is false for `HEAD`, whose response carries
/// headers that announce a body that never comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRequest {
    pub bytes: Vec<u8>,
    pub expects_body: bool,
}

impl RequestSpec {
    pub fn get(path: &str) -> RequestSpec {
        RequestSpec { method: default_method(), path: path.to_string(), headers: Vec::new(), body: None }
    }

    /// Serializes the request. `Host` and `Content-Length` are added unless the spec already
    /// has them (matched case-insensitively).
    pub fn prepare(&self, host: &str) -> PreparedRequest {
        let mut out = Vec::with_capacity(128 + self.body.as_ref().map_or(0, Vec::len));
        out.extend_from_slice(format!("{} {} HTTP/1.1\r\n", self.method, self.path).as_bytes());
        if !self.has_header("host") {
            push_header(&mut out, "Host", host);
        }
        for (name, value) in &self.headers {
            push_header(&mut out, name, value);
        }
        if let Some(body) = &self.body {
            if !self.has_header("content-length") {
                push_header(&mut out, "Content-Length", &body.len().to_string());
            }
        }
        out.extend_from_slice(b"\r\n");
        if let Some(body) = &self.body {
            out.extend_from_slice(body);
        }
        PreparedRequest { bytes: out, expects_body: !self.method.eq_ignore_ascii_case("HEAD") }
    }

    pub fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_gets_host_and_no_length() {
        let p = RequestSpec::get("/v1/health").prepare("127.0.0.1:80");
        assert_eq!(p.bytes, b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n");
        assert!(p.expects_body);
    }

    #[test]
    fn body_gets_content_length_and_headers_keep_order() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: "/v1/search".into(),
            headers: vec![("Authorization".into(), "Bearer k".into()), ("host".into(), "q".into())],
            body: Some(b"{}".to_vec()),
        };
        let text = String::from_utf8(spec.prepare("ignored").bytes).unwrap();
        assert_eq!(text, "POST /v1/search HTTP/1.1\r\nAuthorization: Bearer k\r\nhost: q\r\nContent-Length: 2\r\n\r\n{}");
    }

    #[test]
    fn head_expects_no_body() {
        let spec = RequestSpec { method: "HEAD".into(), ..RequestSpec::get("/") };
        assert!(!spec.prepare("h").expects_body);
    }
}
