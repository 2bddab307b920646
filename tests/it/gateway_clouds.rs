//! `bedrock` and `vertex` AI providers against loopback fakes that check the clouds' own authentication.
//!
//! The fake Bedrock Runtime recomputes every request's SigV4 signature from what it
//! received, with an HMAC of its own over sha2 (apart from the server's ring signer),
//! and refuses one that does not match; it answers in Converse's wire format. The fake
//! Google token endpoint verifies the service-account assertion's RS256 signature with
//! the test key's public half and its claims, and the fake Vertex endpoint takes only
//! the bearer tokens it issued. Agent generations through each get the fakes' answers
//! (text, a tool call, a stream); a wrong credential is refused; the access token is
//! fetched once for many calls; no secret shows in an answer or the server's log.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::loopback::{listen, respond};
use super::plans::LAB;
use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};
use super::soat_generate::{open_sse, read_frames};

const MODEL: &str = "anthropic.claude-3-haiku-20240307-v1:0";
const ACCESS_KEY: &str = "AKIDTESTONLY1234";
const SECRET_KEY: &str = "test-only/secret+access-key-value";
const SESSION_TOKEN: &str = "test-only-session-token-value";

/// One request as the fakes see it: the raw body, for the signature.
struct Raw {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn read_raw(r: &mut BufReader<TcpStream>) -> Option<Raw> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Raw { method, path, headers, body })
}

fn hmac(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::digest([pad(0x36), msg.to_vec()].concat());
    Sha256::digest([pad(0x5c), inner.to_vec()].concat()).to_vec()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every byte but `A-Za-z0-9-._~` as `%XX`.
fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// Why `r`'s SigV4 signature is not one `secrets` (access key id → secret key) made
/// for region `us-west-2` and service `bedrock`, if it is not.
fn sigv4_problem(r: &Raw, secrets: &HashMap<&str, &str>) -> Option<String> {
    let auth = r.header("authorization")?;
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let field = |name: &str| rest.split(", ").find_map(|f| f.strip_prefix(name)).map(str::to_owned);
    let (credential, signed, signature) = (field("Credential=")?, field("SignedHeaders=")?, field("Signature=")?);
    let c: Vec<&str> = credential.split('/').collect();
    let [access, date, region, service, "aws4_request"] = c[..] else { return Some(format!("credential {credential}")) };
    let Some(secret) = secrets.get(access) else { return Some(format!("unknown access key {access}")) };
    if (region, service) != ("us-west-2", "bedrock") {
        return Some(format!("scope {region}/{service}"));
    }
    let amz_date = r.header("x-amz-date")?;
    if !amz_date.starts_with(date) || !signed.split(';').any(|h| h == "host") || !signed.split(';').any(|h| h == "x-amz-date") {
        return Some("host and x-amz-date must be signed".into());
    }
    if r.header("x-amz-security-token").is_some() && !signed.contains("x-amz-security-token") {
        return Some("the session token must be signed".into());
    }
    let canonical_uri: Vec<String> = r.path.split('?').next().unwrap().split('/').map(encode).collect();
    let headers: String = signed.split(';').map(|h| format!("{h}:{}\n", r.header(h).unwrap_or_default())).collect();
    let request = format!("{}\n{}\n\n{headers}\n{signed}\n{}", r.method, canonical_uri.join("/"), hex(&Sha256::digest(&r.body)));
    let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}", hex(&Sha256::digest(request.as_bytes())));
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    (hex(&hmac(&key, to_sign.as_bytes())) != signature).then(|| "signature mismatch".into())
}

/// The fake Bedrock Runtime: the Converse bodies it accepted, and how many it refused.
#[derive(Default)]
struct Bedrock {
    bodies: Vec<Value>,
    refused: usize,
}

fn converse_answer(body: &Value) -> Value {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let content = if last["content"].as_array().is_some_and(|c| c.iter().any(|b| b.get("toolResult").is_some())) {
        json!([{"text": "It is 18C in Paris."}])
    } else if body["toolConfig"]["tools"].is_array() && last.to_string().contains("weather") {
        json!([{"text": "Checking."}, {"toolUse": {"toolUseId": "tooluse_abc", "name": "weather", "input": {"city": "Paris"}}}])
    } else {
        json!([{"text": "Hello from Bedrock."}])
    };
    let stop = if content.to_string().contains("toolUse") { "tool_use" } else { "end_turn" };
    json!({"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
           "usage": {"inputTokens": 11, "outputTokens": 5, "totalTokens": 16}, "metrics": {"latencyMs": 3}})
}

fn fake_bedrock() -> (SocketAddr, Arc<Mutex<Bedrock>>) {
    let state = Arc::new(Mutex::new(Bedrock::default()));
    let st = state.clone();
    let addr = listen(move |stream| {
        let mut out = stream.try_clone().unwrap();
        let mut r = BufReader::new(stream);
        while let Some(req) = read_raw(&mut r) {
            let secrets = HashMap::from([(ACCESS_KEY, SECRET_KEY)]);
            let expected_path = format!("/model/{}/converse", encode(MODEL));
            let (status, answer) = match sigv4_problem(&req, &secrets) {
                _ if req.header("authorization").is_none() => (403, json!({"message": "Missing Authentication Token"})),
                Some(why) => {
                    st.lock().unwrap().refused += 1;
                    (403, json!({"message": format!("The request signature we calculated does not match the signature you provided ({why}).")}))
                }
                None if req.method == "GET" && req.path == "/foundation-models" => {
                    (200, json!({"modelSummaries": [{"modelId": MODEL, "modelName": "Claude 3 Haiku", "inferenceTypesSupported": ["ON_DEMAND"]}]}))
                }
                None if req.path != expected_path || req.method != "POST" => (404, json!({"message": format!("no route {}", req.path)})),
                None => {
                    let body: Value = serde_json::from_slice(&req.body).unwrap();
                    st.lock().unwrap().bodies.push(body.clone());
                    (200, converse_answer(&body))
                }
            };
            if !respond(&mut out, status, &answer) {
                return;
            }
        }
    });
    (addr, state)
}

fn server_logging_to(log: &std::path::Path) -> TestServer {
    TestServer::with(Options { config: format!("{LAB}[log]\nlevel = \"debug\"\n"), log: Some(log.to_owned()), ..Options::default() })
}

fn secret(s: &TestServer, key: &str, value: &str) -> String {
    ok(call(s, "POST", "/api/v1/secrets", key, Some(json!({"name": "cloud", "value": value}))), 201)["id"].as_str().unwrap().to_owned()
}

fn provider(s: &TestServer, key: &str, body: Value) -> String {
    ok(call(s, "POST", "/api/v1/ai-providers", key, Some(body)), 201)["id"].as_str().unwrap().to_owned()
}

fn agent(s: &TestServer, key: &str, provider: &str, extra: Value) -> String {
    let mut body = json!({"ai_provider_id": provider, "name": "helper", "instructions": "You help."});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    ok(call(s, "POST", "/api/v1/agents", key, Some(body)), 201)["id"].as_str().unwrap().to_owned()
}

fn ask(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

fn generate(s: &TestServer, key: &str, agent: &str, text: &str) -> super::client::Response {
    call(s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), key, Some(ask(text)))
}

fn streamed_text(s: &TestServer, key: &str, agent: &str, text: &str) -> String {
    let mut b = ask(text);
    b["stream"] = json!(true);
    let mut r = open_sse(s, key, "POST", &format!("/api/v1/agents/{agent}/generate"), Some(&b), None);
    let frames = read_frames(&mut r, None);
    assert_eq!(frames.last().unwrap().data, "[DONE]", "{frames:?}");
    frames
        .iter()
        .filter_map(|f| serde_json::from_str::<Value>(&f.data).ok())
        .filter(|v| v["type"] == "delta")
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_bedrock_provider_signs_its_converse_calls_and_gets_text_and_tool_calls() {
    let (addr, bedrock) = fake_bedrock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let s = server_logging_to(&log);
    let (_, key) = s.signup("bedrock@example.com");
    let iam = json!({"accessKeyId": ACCESS_KEY, "secretAccessKey": SECRET_KEY, "sessionToken": SESSION_TOKEN}).to_string();
    let sec = secret(&s, &key, &iam);
    let p = provider(
        &s,
        &key,
        json!({"name": "aws", "provider": "bedrock", "default_model": MODEL, "secret_id": sec,
               "base_url": format!("http://{addr}"), "config": {"region": "us-west-2"}}),
    );
    let a = agent(&s, &key, &p, json!({}));

    let g = ok(generate(&s, &key, &a, "Say hello."), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "Hello from Bedrock.");
    let sent = bedrock.lock().unwrap().bodies.last().unwrap().clone();
    assert_eq!(sent["system"][0]["text"], "You help.", "{sent}");
    assert_eq!(sent["messages"][0]["content"][0]["text"], "Say hello.");

    // A tool call: the generation pauses on the client tool, and its output goes back
    // as Converse's toolResult.
    let t = ok(
        call(
            &s,
            "POST",
            "/api/v1/tools",
            &key,
            Some(json!({"name": "weather", "type": "client", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a2 = agent(&s, &key, &p, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(generate(&s, &key, &a2, "What is the weather in Paris?"), 200);
    assert_eq!(g["status"], "requires_action", "{g}");
    let tool_call = g["required_action"]["tool_calls"][0].clone();
    assert_eq!((tool_call["tool_name"].as_str(), tool_call["args"]["city"].as_str()), (Some("weather"), Some("Paris")), "{g}");
    let sent = bedrock.lock().unwrap().bodies.last().unwrap().clone();
    assert_eq!(sent["toolConfig"]["tools"][0]["toolSpec"]["name"], "weather", "{sent}");
    let id = g["id"].as_str().unwrap();
    let outputs = json!({"tool_outputs": [{"tool_call_id": tool_call["id"], "output": "18C"}]});
    let done = ok(call(&s, "POST", &format!("/api/v1/agents/{a2}/generate/{id}/tool-outputs"), &key, Some(outputs)), 200);
    assert_eq!((done["status"].as_str(), done["output"]["content"].as_str()), (Some("completed"), Some("It is 18C in Paris.")), "{done}");
    let sent = bedrock.lock().unwrap().bodies.last().unwrap().clone();
    let turns = sent["messages"].as_array().unwrap();
    assert_eq!(turns[1]["content"][1]["toolUse"]["toolUseId"], "tooluse_abc", "{sent}");
    assert_eq!(turns[2]["content"][0]["toolResult"]["toolUseId"], "tooluse_abc", "{sent}");

    // The listing: ListFoundationModels, signed as the calls are.
    let listed = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{p}/models"), &key, None), 200);
    assert_eq!(listed["models"][0]["id"], MODEL, "{listed}");

    // Streamed: Converse answers whole, and the stream carries it.
    assert_eq!(streamed_text(&s, &key, &a, "Say hello."), "Hello from Bedrock.");
    assert_eq!(bedrock.lock().unwrap().refused, 0);

    // The wrong secret key: the fake's signature check refuses it, and so the call fails.
    let wrong = secret(&s, &key, &json!({"accessKeyId": ACCESS_KEY, "secretAccessKey": "not-the-secret-key"}).to_string());
    let p2 = provider(
        &s,
        &key,
        json!({"name": "aws2", "provider": "bedrock", "default_model": MODEL, "secret_id": wrong,
               "base_url": format!("http://{addr}"), "config": {"region": "us-west-2"}}),
    );
    let a3 = agent(&s, &key, &p2, json!({}));
    let e = refused(generate(&s, &key, &a3, "Say hello."), 502);
    assert_eq!(e["code"], "AI_PROVIDER_ERROR");
    assert!(e["message"].as_str().unwrap().starts_with("Provider returned 403"), "{e}");
    assert_eq!(bedrock.lock().unwrap().refused, 1);
    assert!(!e.to_string().contains("not-the-secret-key"));

    let logged = std::fs::read_to_string(&log).unwrap();
    for value in [SECRET_KEY, SESSION_TOKEN, "not-the-secret-key"] {
        assert!(!logged.contains(value), "the log shows a secret");
    }
}

#[test]
fn a_bedrock_provider_without_a_usable_secret_is_misconfigured_not_called() {
    let (addr, bedrock) = fake_bedrock();
    let s = TestServer::with_config(LAB);
    let (_, key) = s.signup("bedrock-none@example.com");
    let p = provider(&s, &key, json!({"name": "aws", "provider": "bedrock", "default_model": MODEL, "base_url": format!("http://{addr}")}));
    let a = agent(&s, &key, &p, json!({}));
    let e = refused(generate(&s, &key, &a, "Say hello."), 400);
    assert_eq!(e["code"], "AI_PROVIDER_MISCONFIGURED", "{e}");
    let bad = refused(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &key,
            Some(json!({"name": "a", "provider": "bedrock", "default_model": "m", "config": {"region": "us-west-2/../x"}})),
        ),
        400,
    );
    assert_eq!(bad["code"], "VALIDATION_FAILED");
    assert!(bedrock.lock().unwrap().bodies.is_empty());
}

// ---------------------------------------------------------------- vertex

const PROJECT: &str = "proj-test";
const LOCATION: &str = "us-east5";
const VERTEX_MODEL: &str = "gemini-2.5-flash";
const CLIENT_EMAIL: &str = "quarry-test@proj-test.iam.gserviceaccount.com";

fn pem(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/clouds/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The RSAPublicKey (DER) of a PKCS#8 PEM key.
fn public_half(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = STANDARD.decode(body).unwrap();
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
    ring::signature::KeyPair::public_key(&pair).as_ref().to_vec()
}

#[derive(Default)]
struct Google {
    /// Tokens issued and still valid, how many were ever issued, and assertions refused.
    issued: Vec<String>,
    exchanges: usize,
    refused: Vec<String>,
    /// Generate calls served, by the token they carried.
    served: usize,
    unauthorised: usize,
}

/// Why `assertion` is not a JWT the test service account signed for `token_uri`.
fn assertion_problem(assertion: &str, public: &[u8], token_uri: &str) -> Option<String> {
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else { return Some("not a JWT".into()) };
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    if header["alg"] != "RS256" {
        return Some(format!("alg {}", header["alg"]));
    }
    let signed = format!("{}.{}", parts[0], parts[1]);
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public);
    if key.verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).ok()?).is_err() {
        return Some("Invalid JWT Signature.".into());
    }
    let c: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()?;
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let (iat, exp) = (c["iat"].as_u64()?, c["exp"].as_u64()?);
    if c["iss"] != CLIENT_EMAIL || c["aud"] != token_uri || c["scope"] != "https://www.googleapis.com/auth/cloud-platform" {
        return Some(format!("claims {c}"));
    }
    if exp <= now || exp - iat > 3600 || iat > now + 60 {
        return Some(format!("times {iat}..{exp}"));
    }
    None
}

fn gemini_answer() -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello from Vertex."}]}, "finishReason": "STOP"}],
           "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 4, "totalTokenCount": 11}})
}

/// The fake token endpoint (`/token`) and Vertex AI (`/v1/projects/…`) on one port.
fn fake_google() -> (SocketAddr, Arc<Mutex<Google>>) {
    let state = Arc::new(Mutex::new(Google::default()));
    let public = public_half(&pem("TEST-ONLY-service-account-key.pem"));
    let st = state.clone();
    let addr_cell: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
    let cell = addr_cell.clone();
    let addr = listen(move |stream| {
        let mut out = stream.try_clone().unwrap();
        let mut r = BufReader::new(stream);
        let token_uri = format!("http://{}/token", cell.lock().unwrap().unwrap());
        while let Some(req) = read_raw(&mut r) {
            let base = format!("/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{VERTEX_MODEL}");
            let (status, answer) = if req.path == "/token" {
                let form = String::from_utf8_lossy(&req.body).into_owned();
                let field = |k: &str| form.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).unwrap_or_default().to_owned();
                let grant_ok = field("grant_type") == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer";
                match assertion_problem(&field("assertion"), &public, &token_uri) {
                    None if grant_ok => {
                        let mut s = st.lock().unwrap();
                        s.exchanges += 1;
                        let token = format!("ya29.test-only-token-{}", s.exchanges);
                        s.issued.push(token.clone());
                        (200, json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}))
                    }
                    why => {
                        let why = why.unwrap_or_else(|| "grant_type".into());
                        st.lock().unwrap().refused.push(why.clone());
                        (400, json!({"error": "invalid_grant", "error_description": why}))
                    }
                }
            } else {
                let token = req.header("authorization").and_then(|a| a.strip_prefix("Bearer ")).unwrap_or_default().to_owned();
                let mut s = st.lock().unwrap();
                if !s.issued.contains(&token) {
                    s.unauthorised += 1;
                    (401, json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}))
                } else if req.method == "GET" && req.path == "/v1beta1/publishers/google/models" {
                    (200, json!({"publisherModels": [{"name": format!("publishers/google/models/{VERTEX_MODEL}"), "versionId": "001"}]}))
                } else if req.path == format!("{base}:generateContent") {
                    s.served += 1;
                    (200, gemini_answer())
                } else if req.path == format!("{base}:streamGenerateContent?alt=sse") {
                    s.served += 1;
                    drop(s);
                    let data = format!("data: {}\r\n\r\n", gemini_answer());
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n", data.len());
                    if std::io::Write::write_all(&mut out, format!("{head}{data}").as_bytes()).is_err() {
                        return;
                    }
                    continue;
                } else {
                    (404, json!({"error": {"code": 404, "message": format!("no route {}", req.path), "status": "NOT_FOUND"}}))
                }
            };
            if !respond(&mut out, status, &answer) {
                return;
            }
        }
    });
    *addr_cell.lock().unwrap() = Some(addr);
    (addr, state)
}

fn service_account(addr: SocketAddr, key_file: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "test-only-key-id",
        "private_key": pem(key_file),
        "client_email": CLIENT_EMAIL,
        "client_id": "1",
        "token_uri": format!("http://{addr}/token"),
    })
    .to_string()
}

#[test]
fn a_vertex_provider_exchanges_its_service_account_key_once_for_many_calls() {
    let (addr, google) = fake_google();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let s = server_logging_to(&log);
    let (_, key) = s.signup("vertex@example.com");
    let sec = secret(&s, &key, &service_account(addr, "TEST-ONLY-service-account-key.pem"));
    let p = provider(
        &s,
        &key,
        json!({"name": "gcp", "provider": "vertex", "default_model": VERTEX_MODEL, "secret_id": sec,
               "base_url": format!("http://{addr}"), "config": {"location": LOCATION}}),
    );
    let a = agent(&s, &key, &p, json!({}));
    for n in 0..3 {
        let g = ok(generate(&s, &key, &a, &format!("Say hello ({n}).")), 200);
        assert_eq!((g["status"].as_str(), g["output"]["content"].as_str()), (Some("completed"), Some("Hello from Vertex.")), "{g}");
    }
    assert_eq!(streamed_text(&s, &key, &a, "Say hello."), "Hello from Vertex.");
    let listed = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{p}/models"), &key, None), 200);
    assert_eq!(listed["models"][0]["id"], VERTEX_MODEL, "{listed}");
    {
        let g = google.lock().unwrap();
        assert_eq!(g.exchanges, 1, "one token for every call: {:?}", g.refused);
        assert_eq!((g.served, g.unauthorised), (4, 0));
    }
    // The token revoked before it expired: the call it fails is refused, and the next
    // one exchanges the key again rather than failing until the hour is up.
    google.lock().unwrap().issued.clear();
    let e = refused(generate(&s, &key, &a, "Say hello."), 502);
    assert!(e["message"].as_str().unwrap().starts_with("Provider returned 401"), "{e}");
    let g = ok(generate(&s, &key, &a, "Say hello."), 200);
    assert_eq!(g["output"]["content"], "Hello from Vertex.");
    let (exchanges, served) = {
        let g = google.lock().unwrap();
        (g.exchanges, g.served)
    };
    assert_eq!((exchanges, served), (2, 5));

    // A key the token endpoint does not know: its assertion is refused, and so the call.
    let other = secret(&s, &key, &service_account(addr, "TEST-ONLY-other-key.pem"));
    let p2 = provider(
        &s,
        &key,
        json!({"name": "gcp2", "provider": "vertex", "default_model": VERTEX_MODEL, "secret_id": other,
               "base_url": format!("http://{addr}"), "config": {"location": LOCATION, "project": PROJECT}}),
    );
    let a2 = agent(&s, &key, &p2, json!({}));
    let e = refused(generate(&s, &key, &a2, "Say hello."), 502);
    assert_eq!(e["code"], "AI_PROVIDER_ERROR");
    assert!(e["message"].as_str().unwrap().starts_with("Provider returned 400"), "{e}");
    assert_eq!(google.lock().unwrap().refused, ["Invalid JWT Signature."]);
    assert_eq!(google.lock().unwrap().served, 5);

    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains("ya29.test-only-token"), "the log shows an access token");
    assert!(!logged.contains("PRIVATE KEY") && !logged.contains(&pem("TEST-ONLY-service-account-key.pem")[40..120]), "the log shows the key");
}

#[test]
fn a_vertex_provider_needs_a_project_and_a_usable_key() {
    let (addr, google) = fake_google();
    let s = TestServer::with_config(LAB);
    let (_, key) = s.signup("vertex-bad@example.com");
    let mut no_project: Value = serde_json::from_str(&service_account(addr, "TEST-ONLY-service-account-key.pem")).unwrap();
    no_project.as_object_mut().unwrap().remove("project_id");
    let sec = secret(&s, &key, &no_project.to_string());
    let p = provider(
        &s,
        &key,
        json!({"name": "g", "provider": "vertex", "default_model": VERTEX_MODEL, "secret_id": sec, "base_url": format!("http://{addr}")}),
    );
    let a = agent(&s, &key, &p, json!({}));
    let e = refused(generate(&s, &key, &a, "Say hello."), 400);
    assert_eq!(e["code"], "AI_PROVIDER_MISCONFIGURED", "{e}");
    assert!(e["message"].as_str().unwrap().contains("config.project"), "{e}");
    no_project["private_key"] = json!("-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n");
    no_project["project_id"] = json!(PROJECT);
    let sec = secret(&s, &key, &no_project.to_string());
    let p = provider(
        &s,
        &key,
        json!({"name": "g2", "provider": "vertex", "default_model": VERTEX_MODEL, "secret_id": sec, "base_url": format!("http://{addr}")}),
    );
    let a = agent(&s, &key, &p, json!({}));
    let e = refused(generate(&s, &key, &a, "Say hello."), 400);
    assert_eq!(e["code"], "AI_PROVIDER_MISCONFIGURED", "{e}");
    assert!(!e.to_string().contains("not-a-key"), "{e}");
    let g = google.lock().unwrap();
    assert!(g.exchanges == 0 && g.refused.is_empty() && g.served == 0);
}
