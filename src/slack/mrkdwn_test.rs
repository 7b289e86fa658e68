//! Tests of the Markdown → mrkdwn conversion and Block Kit chunking:
//! a conversion table, the 3000-char / 50-block boundaries, and bounded
//! property tests.

use super::*;
use proptest::prelude::*;

/// `input ⇒ expected`, one case per line; `⏎` stands for a newline.
const TABLE: &str = r"
# Title ⇒ *Title*
**bold** __also__ *em* _em_ ~~gone~~ ⇒ *bold* *also* _em_ _em_ ~gone~
<!here> <!channel> <!everyone> <!subteam^S1|@a_team_> ⇒ &lt;!here&gt; &lt;!channel&gt; &lt;!everyone&gt; <!subteam^S1|@a_team_>
<mailto:a@b.co|mail us> <https://a.b> ⇒ <mailto:a@b.co|mail us> <https://a.b>
### Sub heading⏎text ⇒ *Sub heading*⏎⏎text
## **Bold** heading ⇒ *Bold heading*
***both*** ⇒ _*both*_
use `a < b && *c*` ⇒ use `a < b && *c*`
```rust⏎fn f() -> u8 { 1 }⏎``` ⇒ ```⏎fn f() -> u8 { 1 }⏎```
    indented <code>⏎ ⇒ ```⏎indented <code>⏎```
[Rust](https://rust-lang.org) ⇒ <https://rust-lang.org|Rust>
[https://a.com](https://a.com) ⇒ <https://a.com>
[q](https://a.com/?x=1&y=2) ⇒ <https://a.com/?x=1&amp;y=2|q>
<ftp://files.org/a> ⇒ <ftp://files.org/a>
<me@x.org> ⇒ <mailto:me@x.org|me@x.org>
![logo](https://x.com/l.png) ⇒ <https://x.com/l.png|logo>
[![b](https://i.png)](https://h.com) ⇒ <https://h.com|b>
- a⏎- b ⇒ • a⏎• b
* a⏎    * b⏎        * c⏎* d ⇒ • a⏎    ◦ b⏎        ◦ c⏎• d
3. x⏎4. y ⇒ 3. x⏎4. y
1. first⏎   - sub ⇒ 1. first⏎    ◦ sub
- [x] done⏎- [ ] todo ⇒ ☑ done⏎☐ todo
- a⏎⏎- b⏎⏎  more ⇒ • a⏎• b⏎⏎    more
para⏎- item ⇒ para⏎⏎• item
> quoted⏎> more⏎⏎after ⇒ > quoted⏎> more⏎⏎after
> one⏎>⏎> two ⇒ > one⏎>⏎> two
> ```⏎> x⏎> ``` ⇒ > ```⏎> x⏎> ```
a⏎⏎---⏎⏎b ⇒ a⏎⏎———⏎⏎b
| A | B |⏎|---|---|⏎| 1 | 2 | ⇒ *A* | *B*⏎1 | 2
p1⏎⏎⏎⏎p2 ⇒ p1⏎⏎p2
line1  ⏎line2\⏎line3 ⇒ line1⏎line2⏎line3
a & b < c > d ⇒ a &amp; b &lt; c &gt; d
AT&amp;T &lt;3 ⇒ AT&amp;T &lt;3
hi <@U123ABC> and <@W999|bob> ⇒ hi <@U123ABC> and <@W999|bob>
<#C123|general> or <#C456> ⇒ <#C123|general> or <#C456>
<!date^1392734382^{date_short}|Feb 18> ⇒ <!date^1392734382^{date_short}|Feb 18>
<https://x.com?a=1&b=2|Click *here*> ⇒ <https://x.com?a=1&b=2|Click *here*>
**<@U1>** ping ⇒ *<@U1>* ping
| ch | who |⏎|--|--|⏎| <#C1|gen> | <@U1> | ⇒ *ch* | *who*⏎<#C1|gen> | <@U1>
`<!here>` <!here> ⇒ `&lt;!here&gt;` &lt;!here&gt;
a <b>bold</b> c<br>d ⇒ a bold c⏎d
<div>⏎<p>hello & bye</p>⏎</div>⏎⏎next ⇒ hello &amp; bye⏎⏎next
<!-- hidden -->⏎text ⇒ text
not <@someone> a token ⇒ not &lt;@someone&gt; a token
";

#[test]
fn conversion_table() {
    let cases: Vec<_> = TABLE.lines().filter_map(|l| l.split_once(" ⇒ ")).collect();
    assert_eq!(cases.len(), TABLE.trim().lines().count());
    for (input, expected) in cases {
        let (input, expected) = (input.replace('⏎', "\n"), expected.replace('⏎', "\n"));
        assert_eq!(to_mrkdwn(&input), expected, "input: {input:?}");
    }
    assert_eq!(to_mrkdwn(""), "");
}

/// L-9: broadcast mentions from model output are escaped (`<!…>`) or defused (`@…`, with a
/// word joiner), never passed through to Slack; user-group and user mentions still are.
#[test]
fn security_l9_mass_mentions_escaped() {
    for word in ["channel", "here", "everyone"] {
        let out = to_mrkdwn(&format!("<!{word}> hi"));
        assert!(out.contains(&format!("&lt;!{word}&gt;")), "{out}");
        assert!(!out.contains(&format!("<!{word}")), "{out}");
        let labelled = to_mrkdwn(&format!("<!{word}|{word}> hi"));
        assert!(!labelled.contains(&format!("<!{word}")), "{labelled}");
        for plain in [
            format!("@{word} hi"),
            format!("ping **@{}**", word.to_uppercase()),
        ] {
            let out = to_mrkdwn(&plain);
            assert!(!out.to_lowercase().contains(&format!("@{word}")), "{out}");
            assert!(out.contains('\u{2060}'), "{out}");
        }
        for message in to_messages(&to_mrkdwn(&format!("<!{word}> and @{word}"))) {
            assert!(!message.text.contains(&format!("<!{word}")));
            assert!(!message.text.contains(&format!("@{word}")));
        }
    }
    assert_eq!(to_mrkdwn("<@U1> <!subteam^S1>"), "<@U1> <!subteam^S1>");
    assert_eq!(to_mrkdwn("`@channel`"), "`@channel`");
}

/// Section texts of all messages, in order.
fn sections(mrkdwn: &str) -> Vec<String> {
    let text = |b: &Value| b["text"]["text"].as_str().unwrap_or_default().to_string();
    let messages = to_messages(mrkdwn);
    messages
        .iter()
        .flat_map(|m| m.blocks.iter().map(text))
        .collect()
}

#[test]
fn exact_limit_and_one_over() {
    assert_eq!(sections(&"a".repeat(3000)), ["a".repeat(3000)]);
    assert_eq!(
        sections(&"a".repeat(3001)),
        ["a".repeat(3000), "a".to_string()]
    );
    let words = sections(&"word ".repeat(601));
    assert_eq!(words, ["word ".repeat(600).trim_end(), "word"]);
}

#[test]
fn prefers_paragraph_then_line_boundaries() {
    let (p1, p2) = (
        "x".repeat(1000),
        format!("{}\n{}", "y".repeat(1500), "z".repeat(1000)),
    );
    assert_eq!(sections(&format!("{p1}\n\n{p2}")), [p1.clone(), p2]);
    let lines = format!("{p1}\n{}", "w".repeat(2500));
    assert_eq!(sections(&lines), [p1, "w".repeat(2500)]);
}

#[test]
fn counts_chars_not_bytes() {
    assert_eq!(sections(&"é".repeat(3000)), ["é".repeat(3000)]);
    assert_eq!(
        sections(&"😀".repeat(3001)),
        ["😀".repeat(3000), "😀".to_string()]
    );
}

#[test]
fn fifty_and_fifty_one_blocks() {
    let para = "p".repeat(2999);
    let fifty = to_messages(&vec![para.as_str(); 50].join("\n\n"));
    assert_eq!((fifty.len(), fifty[0].blocks.len()), (1, 50));
    assert_eq!(fifty[0].text, vec![para.as_str(); 50].join("\n\n"));
    let more = to_messages(&vec![para.as_str(); 51].join("\n\n"));
    let counts: Vec<_> = more.iter().map(|m| m.blocks.len()).collect();
    assert_eq!(
        (counts, more[1].text.as_str()),
        (vec![50, 1], para.as_str())
    );
    let expected = json!({"type": "section", "text": {"type": "mrkdwn", "text": para}});
    assert_eq!(more[1].blocks[0], expected);
}

#[test]
fn fence_is_closed_and_reopened() {
    let code: String = (0..200)
        .map(|i| format!("let v{i:03} = {i:04}; // pad\n"))
        .collect();
    let parts = sections(&format!("```\n{code}```\n\nbye"));
    assert_eq!(parts.len(), 2);
    for s in &parts {
        let fences = s.lines().filter(|l| l.starts_with("```")).count();
        assert_eq!(fences % 2, 0, "unbalanced section: {s}");
    }
    assert!(parts[0].ends_with("// pad\n```") && parts[1].starts_with("```\nlet v"));
}

#[test]
fn never_cuts_inside_a_token() {
    let token = "<https://example.com|click here now>";
    let spaced = sections(&format!("{} {token} tail", "a".repeat(2980)));
    assert_eq!(spaced, ["a".repeat(2980), format!("{token} tail")]);
    let glued = sections(&format!("{}<@U12345678>", "b".repeat(2995)));
    assert_eq!(glued, ["b".repeat(2995), "<@U12345678>".to_string()]);
    assert_eq!(sections(&format!("{}&amp;", "c".repeat(2997)))[1], "&amp;");
}

#[test]
fn empty_input_gives_no_messages() {
    assert!(to_messages("").is_empty());
    assert!(to_messages(" \n\n\t \n").is_empty());
    assert!(to_messages(&to_mrkdwn("<!-- only a comment -->")).is_empty());
}

fn no_ws(s: &str, keep_ticks: bool) -> Vec<char> {
    let keep = |c: &char| !c.is_whitespace() && (keep_ticks || *c != '`');
    s.chars().filter(keep).collect()
}

fn check_messages(input: &str) -> Result<(), TestCaseError> {
    let mut all = String::new();
    for m in &to_messages(input) {
        prop_assert!(!m.blocks.is_empty() && m.blocks.len() <= MAX_BLOCKS_PER_MESSAGE);
        let texts: Vec<_> = m
            .blocks
            .iter()
            .map(|b| b["text"]["text"].as_str())
            .collect();
        let texts: Vec<_> = texts.into_iter().flatten().collect();
        prop_assert_eq!(&m.text, &texts.join("\n\n"));
        for s in texts {
            prop_assert!(!s.trim().is_empty() && s.chars().count() <= MAX_SECTION_CHARS);
            all.push_str(s);
        }
    }
    // Only whitespace may be dropped and only fence markers added.
    prop_assert_eq!(no_ws(&all, false), no_ws(input, false));
    let mut out = no_ws(&all, true).into_iter();
    prop_assert!(no_ws(input, true).into_iter().all(|c| out.any(|o| o == c)));
    Ok(())
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        10 => "[a-zé😀*_]{1,12}",
        4 => Just(" ".to_string()),
        2 => Just("\n".to_string()),
        1 => Just("\n\n".to_string()),
        1 => Just("\n```\n".to_string()),
        1 => Just("<https://e.com|a b c>".to_string()),
        1 => Just("<@U123>&amp;".to_string()),
        1 => "[a-z]{100,3500}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn to_mrkdwn_never_panics(s in "\\PC{0,400}|[-#*_`>|\\[\\]()<@!&\n 0-9a-z.~]{0,400}") {
        check_messages(&to_mrkdwn(&s))?;
    }

    #[test]
    fn chunks_respect_limits(parts in prop::collection::vec(fragment(), 0..400)) {
        check_messages(&parts.concat())?;
    }
}
