use super::*;
use serde_json::json;

fn run(expr: Value, data: Value) -> Result<Value, Unresolved> {
    let mut d = Data { root: &data, read: Map::new() };
    eval(&expr, &mut d)
}

/// json-logic-js's answers (jsonlogic.com's operations page and json-logic-js's
/// `truthy`, `==` = JavaScript's `==`, `missing` counting `null` and `""`) on the
/// operators SOAT's guardrail docs and these tests use: `(rule, data, expected)`.
#[test]
fn json_logic_answers_as_json_logic_js_does() {
    let cases = [
        // Truthiness: [] falsy, {} and "0" truthy.
        (json!({"!!": [[]]}), json!(null), json!(false)),
        (json!({"!!": ["0"]}), json!(null), json!(true)),
        (json!({"!!": [0]}), json!(null), json!(false)),
        (json!({"!!": [""]}), json!(null), json!(false)),
        (json!({"!!": [{"var": "o"}]}), json!({"o": {}}), json!(true)),
        (json!({"!!": [null]}), json!(null), json!(false)),
        (json!({"!": [[]]}), json!(null), json!(true)),
        (json!({"if": [[], "y", "n"]}), json!(null), json!("n")),
        // var: dotted paths, array indices, defaults, the whole data.
        (json!({"var": "a.b"}), json!({"a": {"b": 3}}), json!(3)),
        (json!({"var": ["a.c", 5]}), json!({"a": {"b": 3}}), json!(5)),
        (json!({"var": "a.c"}), json!({"a": {"b": 3}}), json!(null)),
        (json!({"var": "a.1"}), json!({"a": ["x", "y"]}), json!("y")),
        (json!({"var": 1}), json!(["x", "y"]), json!("y")),
        (json!({"var": ""}), json!(7), json!(7)),
        // in: substring and membership (strict).
        (json!({"in": ["Spring", "Springfield"]}), json!(null), json!(true)),
        (json!({"in": ["a", ["a", "b"]]}), json!(null), json!(true)),
        (json!({"in": [1, ["1", 2]]}), json!(null), json!(false)),
        // and/or return the deciding value and short-circuit.
        (json!({"and": [true, "a", 3]}), json!(null), json!(3)),
        (json!({"and": [true, "", 3]}), json!(null), json!("")),
        (json!({"and": [[], "x"]}), json!(null), json!([])),
        (json!({"or": [false, 0, "a"]}), json!(null), json!("a")),
        (json!({"or": [false, 0]}), json!(null), json!(0)),
        (json!({"or": [true, {"var": "context.nope"}]}), json!({"context": {}}), json!(true)),
        (json!({"and": [false, {"var": "context.nope"}]}), json!({"context": {}}), json!(false)),
        // == is JavaScript's ==; === is strict.
        (json!({"==": [1, "1"]}), json!(null), json!(true)),
        (json!({"==": [0, false]}), json!(null), json!(true)),
        (json!({"==": [true, "1"]}), json!(null), json!(true)),
        (json!({"==": ["", 0]}), json!(null), json!(true)),
        (json!({"==": [null, 0]}), json!(null), json!(false)),
        (json!({"==": [null, false]}), json!(null), json!(false)),
        (json!({"==": [{"var": "args.x"}, 0]}), json!({"args": {}}), json!(false)),
        (json!({"==": [null, null]}), json!(null), json!(true)),
        (json!({"==": [[1], 1]}), json!(null), json!(true)),
        (json!({"!=": [1, "1"]}), json!(null), json!(false)),
        (json!({"!=": [null, 0]}), json!(null), json!(true)),
        (json!({"===": [1, "1"]}), json!(null), json!(false)),
        (json!({"!==": [1, "1"]}), json!(null), json!(true)),
        // Comparisons across types; between.
        (json!({"<": [1, "2"]}), json!(null), json!(true)),
        (json!({"<": ["11", "2"]}), json!(null), json!(true)),
        (json!({"<": [null, 1]}), json!(null), json!(true)),
        (json!({"<": [1, 2, 3]}), json!(null), json!(true)),
        (json!({"<": [1, 4, 3]}), json!(null), json!(false)),
        (json!({"<=": [1, 1, 3]}), json!(null), json!(true)),
        (json!({">=": [2, "2"]}), json!(null), json!(true)),
        // missing: absent, null and "" are missing; 0 is not.
        (json!({"missing": ["a", "b"]}), json!({"a": 1}), json!(["b"])),
        (json!({"missing": ["a.b"]}), json!({"a": {"b": 0}}), json!([])),
        (json!({"missing": ["a", "b"]}), json!({"a": null, "b": ""}), json!(["a", "b"])),
        (json!({"missing": "a"}), json!({}), json!(["a"])),
        (json!({"missing_some": [1, ["a", "b"]]}), json!({"a": 1}), json!([])),
        (json!({"missing_some": [2, ["a", "b", "c"]]}), json!({"a": 1}), json!(["b", "c"])),
        // if chains, arithmetic, strings, arrays.
        (json!({"if": [false, 1, false, 2, 3]}), json!(null), json!(3)),
        (json!({"if": [false, 1]}), json!(null), json!(null)),
        (json!({"+": ["1", 1]}), json!(null), json!(2)),
        (json!({"-": [5]}), json!(null), json!(-5)),
        (json!({"/": [1, 4]}), json!(null), json!(0.25)),
        (json!({"%": [7, 3]}), json!(null), json!(1)),
        (json!({"max": [3, 1, 2]}), json!(null), json!(3)),
        (json!({"cat": ["a", 1, true]}), json!(null), json!("a1true")),
        (json!({"substr": ["quarry", -2]}), json!(null), json!("ry")),
        (json!({"merge": [[1], 2, [3, [4]]]}), json!(null), json!([1, 2, 3, [4]])),
    ];
    for (rule, data, want) in cases {
        assert_eq!(apply(&rule, &data), Ok(want.clone()), "{rule} over {data}");
    }
}

/// some/all/none over arrays (the scorer's expressions may use them; a guardrail's
/// `check` keeps vars in their namespaces).
#[test]
fn some_all_and_none_answer_as_json_logic_js_does() {
    let gt = |n: i64| json!({">": [{"var": ""}, n]});
    for (rule, want) in [
        (json!({"some": [[1, 2], gt(1)]}), true),
        (json!({"some": [[], gt(1)]}), false),
        (json!({"all": [[1, 2], gt(0)]}), true),
        (json!({"all": [[], gt(0)]}), false),
        (json!({"none": [[1, 2], gt(5)]}), true),
        (json!({"none": [[], gt(5)]}), true),
        (json!({"some": [{"var": "xs"}, {"==": [{"var": "k"}, "b"]}]}), true),
    ] {
        assert_eq!(apply(&rule, &json!({"xs": [{"k": "a"}, {"k": "b"}]})), Ok(json!(want)), "{rule}");
    }
}

/// Where the crate stays stricter than JavaScript: a comparison with no number is an
/// error (json-logic-js: false), so a guard using it fails.
#[test]
fn an_ordering_of_a_non_number_is_an_error_not_false() {
    assert!(apply(&json!({"<": ["a", 1]}), &json!(null)).is_err());
    assert!(run(json!({"<": [{"var": "args.name"}, 1]}), json!({"args": {"name": "a"}})).is_err());
}

#[test]
fn classifies_by_a_threshold_and_reads_a_missing_arg_as_null() {
    let class = json!({"if": [{"<": [{"var": "args.amount"}, 500]}, "B", "C"]});
    assert_eq!(run(class.clone(), json!({"args": {"amount": 100}})), Ok(json!("B")));
    assert_eq!(run(class.clone(), json!({"args": {"amount": 900}})), Ok(json!("C")));
    assert_eq!(run(class, json!({"args": {}})), Ok(json!("B")));
}

#[test]
fn a_missing_context_key_is_unresolved_not_falsy() {
    let guard = json!({"<=": [{"var": "args.amount"}, {"var": "context.max"}]});
    assert_eq!(run(guard.clone(), json!({"args": {"amount": 1}, "context": {"max": 5}})), Ok(json!(true)));
    assert_eq!(run(guard, json!({"args": {"amount": 1}, "context": {}})), Err(Unresolved("context.max".into())));
    // With a default it resolves; in an untaken branch it is never read.
    assert_eq!(run(json!({"var": ["context.max", 3]}), json!({"context": {}})), Ok(json!(3)));
    assert_eq!(run(json!({"if": [true, "A", {"var": "runtime.action"}]}), json!({"runtime": {}})), Ok(json!("A")));
    // `missing` is how a document asks, so it never fails.
    assert_eq!(run(json!({"missing": ["context.max"]}), json!({"context": {}})), Ok(json!(["context.max"])));
}

#[test]
fn the_snapshot_holds_what_the_expression_names() {
    let data = json!({"args": {"amount": 7}, "context": {"max": 5}});
    let mut d = Data { root: &data, read: Map::new() };
    let _ = eval(&json!({"and": [{"var": "args.amount"}, {"var": "args.other"}, {"var": "context.max"}, {"var": "context.gone"}]}), &mut d);
    assert_eq!(Value::Object(d.read), json!({"args.amount": 7, "args.other": null, "context.max": 5}));
}

#[test]
fn check_refuses_unknown_operators_namespaces_and_runtime_keys() {
    assert!(check(&json!({"and": [{"var": "args.a"}, {"var": "runtime.usage.cost_usd_24h"}]})).is_ok());
    assert!(check(&json!({"regex": ["a", "b"]})).is_err());
    assert!(check(&json!({"quarry:var_strict": "context.a"})).is_err());
    assert!(check(&json!({"var": "secrets.a"})).is_err());
    assert!(check(&json!({"var": "runtime.usage.nope"})).is_err());
}

/// Odd but well-formed expressions (what a fuzzer sends `evaluateGuardrail`) answer or
/// err; none panics.
#[test]
fn odd_expressions_answer_or_err_and_never_panic() {
    let data = json!({"args": {"s": "abc", "n": 1, "a": [1, 2]}, "context": {}, "runtime": {}});
    for expr in [
        json!({"substr": ["abc", 99_999_999_999_i64]}),
        json!({"substr": ["abc", -99_999_999_999_i64, -5]}),
        json!({"substr": [{"var": "args.s"}, 1.5]}),
        json!({"%": [1, 0]}),
        json!({"/": [1, 0]}),
        json!({"/": [0, 0]}),
        json!({"-": []}),
        json!({"min": []}),
        json!({"max": ["a"]}),
        json!({"merge": []}),
        json!({"cat": []}),
        json!({"in": [1, 2]}),
        json!({"in": [{"var": "args.a"}, {"var": "args.n"}]}),
        json!({"missing_some": [1, "a"]}),
        json!({"missing_some": [-1, ["args.x"]]}),
        json!({"missing": [1, null]}),
        json!({"var": [[1]]}),
        json!({"var": [{"var": "args.s"}]}),
        json!({"if": []}),
        json!({"?:": [1]}),
        json!({"!": []}),
        json!({"==": []}),
        json!({"==": [1]}),
        json!({"<": [1]}),
        json!({"<": []}),
        json!({"+": [1e308, 1e308]}),
        json!({"*": [-1e308, 1e308]}),
        json!({"+": [9_223_372_036_854_775_807_i64, 1]}),
        json!({"*": [9_223_372_036_854_775_807_i64, 2]}),
        json!({"-": [-9_223_372_036_854_775_807_i64, 9]}),
        json!({"%": [-9_223_372_036_854_775_807_i64, -1]}),
        json!({"and": []}),
        json!({"or": []}),
        json!({"!!": []}),
        json!({"cat": [[1, [2, {"a": 1}]], {"var": "args"}]}),
        json!({"==": [{"var": "args"}, "[object Object]"]}),
        json!({"var": "runtime.usage.tokens_24h"}),
        json!([[[[[[[[[[[[[[[[[[[[{"var": "args.n"}]]]]]]]]]]]]]]]]]]]]),
    ] {
        let mut d = Data { root: &data, read: Map::new() };
        let _ = eval(&expr, &mut d);
        let _ = apply(&expr, &data);
        let _ = compiles(&expr);
    }
}
