//! Lua as Redis runs it: conversions both ways, `cjson`, `bit`, errors as replies.

use bytes::Bytes;
use tokio::sync::broadcast;

use super::*;

fn scripting() -> Scripting {
    let (events, _) = broadcast::channel(16);
    let mut db = Db::new(events);
    db.begin(1_700_000_000_000_000);
    Scripting::new(db).unwrap()
}

fn eval(s: &mut Scripting, body: &str) -> Reply {
    s.eval(body.as_bytes(), &[b"k1"], &[b"a1", b"a2"])
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn script_values_become_replies_as_in_redis() {
    let mut s = scripting();
    assert_eq!(eval(&mut s, "return 3.99"), Reply::Int(3));
    assert_eq!(eval(&mut s, "return -3.99"), Reply::Int(-3));
    assert_eq!(eval(&mut s, "return true"), Reply::Int(1));
    assert_eq!(eval(&mut s, "return false"), Reply::Nil);
    assert_eq!(eval(&mut s, "return nil"), Reply::Nil);
    assert_eq!(eval(&mut s, "return 'x'"), bulk("x"));
    // An array stops at its first nil.
    assert_eq!(
        eval(&mut s, "return {1, 'two', nil, 4}"),
        Reply::Array(vec![Reply::Int(1), bulk("two")])
    );
    assert_eq!(
        eval(&mut s, "return {err = 'BAD thing'}"),
        Reply::Error("BAD thing".into())
    );
    assert_eq!(
        eval(&mut s, "return redis.status_reply('FINE')"),
        Reply::Status("FINE".into())
    );
    assert_eq!(
        eval(&mut s, "return {KEYS[1], ARGV[2], #ARGV}"),
        Reply::Array(vec![bulk("k1"), bulk("a2"), Reply::Int(2)])
    );
}

#[test]
fn replies_reach_scripts_as_in_redis() {
    let mut s = scripting();
    // Nil is false, status a table with ok, integers numbers.
    assert_eq!(
        eval(&mut s, "return redis.call('GET', 'nope') == false"),
        Reply::Int(1)
    );
    assert_eq!(
        eval(&mut s, "return redis.call('SET', 'k', 'v').ok"),
        bulk("OK")
    );
    assert_eq!(
        eval(&mut s, "return redis.call('INCRBY', 'n', 41) + 1"),
        Reply::Int(42)
    );
    assert_eq!(
        eval(
            &mut s,
            "local v = redis.call('HMGET', 'h', 'a', 'b'); return {v[1] == false, #v}"
        ),
        Reply::Array(vec![Reply::Int(1), Reply::Int(2)])
    );
    // Numbers as arguments: whole ones as integers, others as their shortest text.
    eval(
        &mut s,
        "redis.call('SET', 'x', 1e15); redis.call('SET', 'y', 0.1 + 0.2)",
    );
    assert_eq!(
        eval(&mut s, "return redis.call('GET', 'x')"),
        bulk("1000000000000000")
    );
    assert_eq!(
        eval(&mut s, "return redis.call('GET', 'y')"),
        bulk("0.30000000000000004")
    );
    assert!(matches!(
        eval(&mut s, "return redis.call('SET', 'x', {})"),
        Reply::Error(e) if e.contains("must be strings or integers")
    ));
}

#[test]
fn a_command_error_raises_from_call_and_is_a_value_from_pcall() {
    let mut s = scripting();
    eval(&mut s, "redis.call('SET', 'str', 'v')");
    let raised = eval(
        &mut s,
        "redis.call('HGET', 'str', 'f'); return 'not reached'",
    );
    assert!(
        matches!(&raised, Reply::Error(e) if e.starts_with("WRONGTYPE")),
        "{raised:?}"
    );
    assert_eq!(
        eval(
            &mut s,
            "local r = redis.pcall('HGET', 'str', 'f'); return type(r.err)"
        ),
        bulk("string")
    );
    // A script's own error is ERR; nothing panics.
    let own = eval(&mut s, "return nil + 1");
    assert!(
        matches!(&own, Reply::Error(e) if e.starts_with("ERR ")),
        "{own:?}"
    );
    let compile = eval(&mut s, "return (");
    assert!(
        matches!(&compile, Reply::Error(e) if e.starts_with("ERR Error compiling script")),
        "{compile:?}"
    );
    assert!(matches!(
        eval(&mut s, "return redis.call('EVAL', 'return 1', 0)"),
        Reply::Error(e) if e.contains("not allowed from script")
    ));
}

#[test]
fn a_script_may_neither_create_nor_read_a_missing_global_as_on_redis() {
    let mut s = scripting();
    let made = eval(&mut s, "NEW_GLOBAL = 1; return 1");
    assert!(
        matches!(&made, Reply::Error(e) if e.contains("global variable 'NEW_GLOBAL'")),
        "{made:?}"
    );
    let read = eval(&mut s, "return NOWHERE");
    assert!(
        matches!(&read, Reply::Error(e) if e.contains("nonexistent global variable 'NOWHERE'")),
        "{read:?}"
    );
    // Locals, and the libraries' own globals, as ever.
    assert_eq!(
        eval(&mut s, "local x = 2; return x + #KEYS + #ARGV"),
        Reply::Int(5)
    );
    assert_eq!(eval(&mut s, "return type(cjson.encode)"), bulk("function"));
}

#[test]
fn cjson_encodes_and_decodes_as_redis_does() {
    let mut s = scripting();
    let cases = [
        ("{}", "{}"),
        ("{1, 2, 3}", "[1,2,3]"),
        ("{a = '/\"\\n'}", r#"{"a":"\/\"\n"}"#),
        ("{0.1}", "[0.1]"),
        ("{1/3}", "[0.33333333333333]"),
        ("{1e15}", "[1e+15]"),
        ("{123456789012345678}", "[1.2345678901235e+17]"),
        ("{1733000000123}", "[1733000000123]"),
        ("{-0.00001}", "[-1e-05]"),
        ("{[1] = 'a', [3] = 'c'}", r#"["a",null,"c"]"#),
        ("{true, false, cjson.null}", "[true,false,null]"),
        ("{{}}", "[{}]"),
    ];
    for (table, json) in cases {
        assert_eq!(
            eval(&mut s, &format!("return cjson.encode({table})")),
            bulk(json),
            "{table}"
        );
    }
    assert!(matches!(
        eval(&mut s, "return cjson.encode({[20] = 1})"),
        Reply::Error(e) if e.contains("excessively sparse array")
    ));
    assert!(matches!(
        eval(&mut s, "return cjson.encode({0/0})"),
        Reply::Error(e) if e.contains("NaN or Inf")
    ));
    // Round trips, and null is cjson.null (truthy).
    assert_eq!(
        eval(
            &mut s,
            r#"local t = cjson.decode('{"a":[1,2.5,"x"],"n":null,"e":"\\u00e9"}')
               return {t.a[1], tostring(t.a[2]), t.a[3], t.n == cjson.null and 1 or 0, t.e}"#
        ),
        Reply::Array(vec![
            Reply::Int(1),
            bulk("2.5"),
            bulk("x"),
            Reply::Int(1),
            bulk("é"),
        ])
    );
    assert_eq!(
        eval(
            &mut s,
            r#"return cjson.encode(cjson.decode('{"k":[1,{"z":false}]}'))"#
        ),
        bulk(r#"{"k":[1,{"z":false}]}"#)
    );
}

#[test]
fn bit_is_luabitop() {
    let mut s = scripting();
    assert_eq!(
        eval(
            &mut s,
            "return {bit.bxor(5, 3), bit.rshift(-1, 28), bit.band(0xff, 0x0f, 0x3), \
             bit.bxor(0, 4294967295), bit.tohex(255), bit.lshift(1, 31)}"
        ),
        Reply::Array(vec![
            Reply::Int(6),
            Reply::Int(15),
            Reply::Int(3),
            Reply::Int(-1),
            bulk("000000ff"),
            Reply::Int(-2147483648),
        ])
    );
}

#[test]
fn a_library_registers_functions_called_by_name() {
    let mut s = scripting();
    let lib = b"#!lua name=mylib\n\
        local function twice(x) return x * 2 end\n\
        redis.register_function{function_name = 'dbl', callback = function(keys, argv)\n\
          return twice(tonumber(argv[1])) end, flags = {'no-writes'}}\n\
        redis.register_function('first', function(keys) return keys[1] end)\n";
    assert_eq!(s.function_load(lib, false), bulk("mylib"));
    assert!(matches!(s.function_load(lib, false), Reply::Error(e) if e.contains("already exists")));
    assert_eq!(s.function_load(lib, true), bulk("mylib"));
    assert_eq!(s.fcall(b"dbl", &[], &[b"21"]), Reply::Int(42));
    assert_eq!(s.fcall(b"first", &[b"key"], &[]), bulk("key"));
    assert_eq!(
        s.fcall(b"nope", &[], &[]),
        Reply::Error("ERR Function not found".into())
    );
    // Outside a load, registering is refused.
    assert!(matches!(
        eval(&mut s, "redis.register_function('x', function() end)"),
        Reply::Error(e) if e.contains("FUNCTION LOAD")
    ));
    s.function_flush();
    assert_eq!(
        s.fcall(b"dbl", &[], &[b"1"]),
        Reply::Error("ERR Function not found".into())
    );
}

#[test]
fn scripts_are_kept_by_their_sha() {
    let mut s = scripting();
    let Reply::Bulk(sha) = s.script_load(b"return ARGV[1]") else {
        panic!("SCRIPT LOAD answers the SHA-1")
    };
    assert_eq!(&sha[..], b"098e0f0d1448c0a81dafe820f66d460eb09263da");
    assert_eq!(s.evalsha(&sha, &[], &[b"hi"]), bulk("hi"));
    assert_eq!(
        s.evalsha(b"0000000000000000000000000000000000000000", &[], &[]),
        Reply::Error("NOSCRIPT No matching script. Please use EVAL.".into())
    );
}

#[test]
fn numbers_are_written_as_percent_14g() {
    let cases = [
        (0.1, "0.1"),
        (100.0, "100"),
        (1e14, "1e+14"),
        (99999999999999.0, "99999999999999"),
        (0.0001, "0.0001"),
        (0.00001234, "1.234e-05"),
        (-2.5, "-2.5"),
        (2.0 / 3.0, "0.66666666666667"),
        (123_456.789_012_345_67, "123456.78901235"),
    ];
    for (x, text) in cases {
        let mut out = Vec::new();
        cjson::format_g14(x, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), text, "{x}");
    }
}

#[test]
fn cjson_decode_refuses_what_is_not_json_with_an_error() {
    let mut s = scripting();
    for bad in [
        r#"{"a":}"#,
        "[1,2",
        r#""\\ud800""#,
        "1 2",
        "nul",
        r#"{"a" 1}"#,
    ] {
        let r = eval(&mut s, &format!("return cjson.decode('{bad}')"));
        assert!(
            matches!(&r, Reply::Error(e) if e.starts_with("ERR ")),
            "{bad}: {r:?}"
        );
    }
    assert_eq!(
        eval(
            &mut s,
            r#"return cjson.decode('"\\ud83d\\ude00 \\"q\\" \\/"')"#
        ),
        bulk("😀 \"q\" /")
    );
    assert_eq!(
        eval(&mut s, "return #cjson.decode('[[],{},[1,[2]],\"x\"]')"),
        Reply::Int(4)
    );
}
