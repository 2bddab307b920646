//! The policy on addresses alone: every special range, every spelling of one, the
//! operator's rules, the host's own ports. No connection is opened.

use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn at(text: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip(text), port)
}

fn closed() -> Policy {
    Policy::new(Vec::new())
}

fn allowing(rules: &[&str]) -> Policy {
    Policy::new(rules.iter().map(|r| Rule::parse(r).unwrap()).collect())
}

#[test]
fn every_special_range_is_refused_by_default() {
    let cases = [
        ("127.0.0.1", Range::Loopback),
        ("127.255.255.254", Range::Loopback),
        ("::1", Range::Loopback),
        ("10.1.2.3", Range::Private),
        ("172.16.0.1", Range::Private),
        ("172.31.255.255", Range::Private),
        ("192.168.1.1", Range::Private),
        ("fd12:3456::1", Range::Private),
        ("fc00::1", Range::Private),
        ("fec0::1", Range::Private),
        ("64:ff9b:1::a00:1", Range::Private),
        ("169.254.1.1", Range::LinkLocal),
        ("fe80::1", Range::LinkLocal),
        ("169.254.169.254", Range::Metadata),
        ("fd00:ec2::254", Range::Metadata),
        ("100.100.100.200", Range::Metadata),
        ("100.64.0.1", Range::Shared),
        ("100.127.255.255", Range::Shared),
        ("224.0.0.1", Range::Multicast),
        ("239.255.255.250", Range::Multicast),
        ("ff02::1", Range::Multicast),
        ("255.255.255.255", Range::Broadcast),
        ("0.0.0.0", Range::Unspecified),
        ("0.1.2.3", Range::Unspecified),
        ("::", Range::Unspecified),
        ("192.0.2.1", Range::Documentation),
        ("198.51.100.7", Range::Documentation),
        ("203.0.113.9", Range::Documentation),
        ("2001:db8::1", Range::Documentation),
        ("3fff::1", Range::Documentation),
        ("192.0.0.8", Range::Reserved),
        ("192.88.99.1", Range::Reserved),
        ("198.18.0.1", Range::Reserved),
        ("198.19.255.255", Range::Reserved),
        ("240.0.0.1", Range::Reserved),
        ("2001::1", Range::Reserved),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Range::Reserved),
        ("100::1", Range::Reserved),
        ("4000::1", Range::Reserved),
    ];
    for (text, want) in cases {
        assert_eq!(range(ip(text)), Some(want), "{text}");
        let refused = closed().check(at(text, 443)).unwrap_err();
        assert_eq!(refused.why, Why::Range(want), "{text}");
        assert_eq!(refused.to_string(), REFUSED, "{text}: one message for every refusal");
    }
}

#[test]
fn the_public_internet_is_reached() {
    for text in [
        "1.1.1.1",
        "8.8.8.8",
        "93.184.216.34",
        "172.15.255.255",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "169.253.1.1",
        "198.20.0.1",
        "223.255.255.255",
        "2606:4700:4700::1111",
        "2a00:1450:4001::1",
    ] {
        assert_eq!(range(ip(text)), None, "{text}");
        assert!(closed().check(at(text, 443)).is_ok(), "{text}");
    }
}

#[test]
fn an_ipv6_spelling_of_an_ipv4_address_is_judged_as_that_address() {
    for (v6, v4) in [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::ffff:7f00:1", "127.0.0.1"),
        ("::127.0.0.1", "127.0.0.1"),
        ("::ffff:0:127.0.0.1", "127.0.0.1"),
        ("64:ff9b::127.0.0.1", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2002:7f00:1::1", "127.0.0.1"),
        ("2002:a00:1::", "10.0.0.1"),
        ("::ffff:8.8.8.8", "8.8.8.8"),
        ("64:ff9b::808:808", "8.8.8.8"),
    ] {
        assert_eq!(canonical(ip(v6)), ip(v4), "{v6}");
        assert_eq!(range(ip(v6)), range(ip(v4)), "{v6}");
    }
    assert_eq!(canonical(ip("::1")), ip("::1"), "IPv6's own loopback stays itself");
    assert_eq!(canonical(ip("::")), ip("::"));
}

#[test]
fn a_url_host_is_judged_in_every_spelling_that_needs_no_lookup() {
    let p = closed();
    for url in [
        "http://127.0.0.1:8080/x",
        "http://127.1:8080/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://017700000001/",
        "http://0.0.0.0:9/",
        "http://0/",
        "http://[::1]:80/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://localhost:11434/v1",
        "http://LOCALHOST./v1",
        "http://api.localhost/",
        "https://169.254.169.254/latest/meta-data",
        "http://[fd00:ec2::254]/",
        "http://10.0.0.5:8000/v1",
    ] {
        let uri: hyper::Uri = url.parse().unwrap();
        assert!(p.check_url(&uri).is_err(), "{url}");
    }
    for url in ["https://api.openai.com/v1", "http://example.com/", "http://1.1.1.1/", "http://127.0.0.1.nip.io/"] {
        let uri: hyper::Uri = url.parse().unwrap();
        assert!(p.check_url(&uri).is_ok(), "{url}: a name is judged at connect time");
    }
}

#[test]
fn inet_aton_reads_what_getaddrinfo_reads() {
    let v4 = |t: &str| inet_aton(t).map(|a| a.to_string());
    assert_eq!(v4("127.1").as_deref(), Some("127.0.0.1"));
    assert_eq!(v4("127.0.1").as_deref(), Some("127.0.0.1"));
    assert_eq!(v4("2130706433").as_deref(), Some("127.0.0.1"));
    assert_eq!(v4("0x7f000001").as_deref(), Some("127.0.0.1"));
    assert_eq!(v4("0300.0250.1.1").as_deref(), Some("192.168.1.1"));
    assert_eq!(v4("10.0x10000").as_deref(), Some("10.1.0.0"));
    for bad in ["", "256.1", "1.2.3.4.5", "1.256.1.1", "4294967296", "08", "example.com", "1..1", "127.0.0.1a"] {
        assert_eq!(v4(bad), None, "{bad}");
    }
}

#[test]
fn the_operator_opens_addresses_and_ranges_with_or_without_a_port() {
    let p = allowing(&["10.0.0.5:8000", "192.168.0.0/16", "[fd00::7]:9000", "::1", "172.16.0.0/12:443"]);
    assert!(p.check(at("10.0.0.5", 8000)).is_ok());
    assert!(p.check(at("10.0.0.5", 8001)).is_err(), "the rule names one port");
    assert!(p.check(at("10.0.0.6", 8000)).is_err());
    assert!(p.check(at("::ffff:10.0.0.5", 8000)).is_ok(), "judged as the IPv4 address the rule names");
    assert!(p.check(at("192.168.44.1", 1)).is_ok());
    assert!(p.check(at("fd00::7", 9000)).is_ok());
    assert!(p.check(at("fd00::7", 9001)).is_err());
    assert!(p.check(at("::1", 5)).is_ok());
    assert!(p.check(at("127.0.0.1", 5)).is_err(), "::1 is not 127.0.0.1");
    assert!(p.check(at("172.20.1.1", 443)).is_ok());
    assert!(p.check(at("172.20.1.1", 80)).is_err());
    assert!(p.check(at("169.254.169.254", 80)).is_err(), "what no rule opens stays closed");
    let everything = allowing(&["0.0.0.0/0", "::/0"]);
    assert!(everything.check(at("127.0.0.1", 80)).is_ok() && everything.check(at("fe80::1", 80)).is_ok());
}

#[test]
fn rules_are_parsed_strictly() {
    let rule = |t: &str| Rule::parse(t).map(|r| r.to_string());
    assert_eq!(rule("10.0.0.5").unwrap(), "10.0.0.5/32");
    assert_eq!(rule(" 10.1.2.3/8 ").unwrap(), "10.0.0.0/8", "masked to its prefix");
    assert_eq!(rule("10.0.0.0/24:8000").unwrap(), "10.0.0.0/24:8000");
    assert_eq!(rule("[::1]:9000").unwrap(), "[::1/128]:9000");
    assert_eq!(rule("[fd00::/8]:1").unwrap(), "[fd00::/8]:1");
    assert_eq!(rule("fd00::/8").unwrap(), "fd00::/8");
    assert_eq!(rule("::ffff:10.0.0.0/104").unwrap(), "10.0.0.0/8", "an IPv4-mapped range is the IPv4 range");
    for bad in [
        "localhost",
        "localhost:8000",
        "vllm.internal:8000",
        "10.0.0.5:0",
        "10.0.0.5:70000",
        "10.0.0.0/33",
        "fd00::/129",
        "[::1",
        "[::1]x",
        "",
        "10.0.0.5/",
    ] {
        assert!(Rule::parse(bad).is_err(), "{bad}");
    }
    assert!(Rule::parse("vllm.internal:8000").unwrap_err().contains("names are not accepted"));
}

#[test]
fn the_hosts_own_ports_stay_closed_whatever_allow_says() {
    let p = allowing(&["127.0.0.0/8", "::1", "0.0.0.0/8", "::/128"]).with_local_model(Some(18080));
    p.serving_on(4400);
    for spelling in ["127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::ffff:127.0.0.1", "::"] {
        for port in [18080, 4400] {
            assert_eq!(p.check(at(spelling, port)).unwrap_err().why, Why::OwnPort, "{spelling}:{port}");
        }
        assert!(p.check(at(spelling, 9000)).is_ok(), "{spelling}: another port is what allow opened");
    }
    assert!(p.check(at("8.8.8.8", 4400)).is_ok(), "another host's port 4400 is not ours");
    assert_eq!(closed().with_local_model(Some(18080)).check(at("127.0.0.1", 18080)).unwrap_err().why, Why::OwnPort);
}

#[test]
fn the_operators_destinations_are_not_judged() {
    assert!(Trust::Operator.check(at("127.0.0.1", 80)).is_ok());
    let tenant = Trust::Tenant(Arc::new(closed()));
    assert!(tenant.check(at("127.0.0.1", 80)).is_err());
    let mixed = vec![at("10.0.0.1", 443), at("8.8.8.8", 443), at("::1", 443)];
    assert_eq!(tenant.allowed(mixed.clone()).unwrap(), vec![at("8.8.8.8", 443)], "only the public address is connected to");
    assert_eq!(Trust::Operator.allowed(mixed.clone()).unwrap(), mixed);
    assert_eq!(tenant.allowed(vec![at("10.0.0.1", 443), at("::1", 443)]).unwrap_err().to, at("10.0.0.1", 443));
}

#[test]
fn a_refusal_is_found_under_the_errors_that_carry_it() {
    let r = Refused { to: at("127.0.0.1", 80), why: Why::Range(Range::Loopback) };
    let io = std::io::Error::other(r);
    assert_eq!(refusal_in(&io), Some(&r));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(r);
    assert_eq!(refusal_in(&*boxed), Some(&r));
    assert_eq!(refusal_in(&std::io::Error::other("connection refused")), None);
}
