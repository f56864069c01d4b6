//! Images: `ag-prompt -a FILE` with a PNG, JPEG, GIF or WebP (told by its content) sends it as
//! image content to the providers that take it, stores it as a `user/image` chunk that `cat`,
//! `show` and `export` show as `[image: TYPE, N bytes]`, and is refused, before anything is
//! sent or written, by a model that cannot see.

use serde_json::{json, Value};

use crate::fake_provider::{sse, FakeProvider, Reply};
use crate::prompt::{env_for, env_with, session_id, MODEL};
use crate::support::{chunk, TestEnv};

/// A file that starts like a PNG (the signature is what makes it one), `len` bytes long.
fn png(len: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.extend((0..len.saturating_sub(8)).map(|i| (i % 251) as u8));
    b
}

fn jpeg() -> Vec<u8> {
    let mut b = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00".to_vec();
    b.extend(std::iter::repeat_n(7u8, 100));
    b
}

fn put(env: &TestEnv, name: &str, bytes: &[u8]) -> String {
    let p = env.cwd.join(name);
    std::fs::write(&p, bytes).unwrap();
    name.to_string()
}

/// The first user message of a request body.
fn first_user(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_else(|| panic!("no user message: {body}"))
}

#[test]
fn anthropic_gets_a_base64_image_block_before_the_prompt_and_keeps_it_byte_identical() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::anthropic_text("A chart.")));
    fake.push(Reply::Sse(sse::anthropic_text("Still a chart.")));
    let env = env_for(&fake);
    let bytes = png(300);
    put(&env, "shot.png", &bytes);
    let run = env
        .run(
            "ag-prompt",
            &["-m", MODEL, "-a", "shot.png", "what is this?"],
        )
        .ok();
    assert!(run.stdout.contains("A chart."), "{}", run.stdout);
    let first = fake.requests()[0].body.clone();
    let data = ag::log::image::encode(&bytes);
    assert_eq!(
        first_user(&first)["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "text", "text": "what is this?", "cache_control": {"type": "ephemeral"}}
        ])
    );
    // The log holds the image as its own chunk; people see what it is, not its bytes.
    let id = session_id(&run);
    let chunks = env.chunks(&id);
    assert_eq!(chunks[0]["type"], "image");
    assert_eq!(chunks[0]["role"], "user");
    assert_eq!(
        chunks[0]["data"],
        json!({"media_type": "image/png", "data": data})
    );
    let label = "[image: image/png, 300 bytes]";
    let cat = env.log(&["cat", &id]).ok().stdout;
    assert!(cat.contains(label) && !cat.contains(&data[..40]), "{cat}");
    let md = env.log(&["export", &id, "--format", "md"]).ok().stdout;
    assert!(md.contains(label) && !md.contains(&data[..40]), "{md}");
    let html = env.log(&["export", &id, "--format", "html"]).ok().stdout;
    assert!(html.contains(label), "the HTML page names the image");

    // A follow-up sends the same bytes for the first message (the prompt cache holds).
    env.run("ag-prompt", &["-c", "-m", MODEL, "and the colours?"])
        .ok();
    let second = fake.requests()[1].body.clone();
    let strip = |v: &Value| ag::fold::strip_cache_control(v);
    assert_eq!(
        strip(&first_user(&second)["content"][0]),
        strip(&first_user(&first)["content"][0])
    );
}

#[test]
fn openai_gets_a_data_url_part_and_the_type_comes_from_the_content_not_the_name() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::openai(Some("A cat."), &[], "stop", (9, 2))));
    let env = env_for(&fake);
    let bytes = jpeg();
    put(&env, "photo.dat", &bytes);
    env.run(
        "ag-prompt",
        &["-m", "openai/gpt-test", "-a", "photo.dat", "who is this?"],
    )
    .ok();
    let body = fake.requests()[0].body.clone();
    let url = format!("data:image/jpeg;base64,{}", ag::log::image::encode(&bytes));
    assert_eq!(
        first_user(&body)["content"],
        json!([
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": "who is this?"}
        ])
    );
}

#[test]
fn a_model_that_cannot_see_refuses_images_before_anything_is_sent_or_written() {
    let env = env_with(None, "");
    put(&env, "shot.png", &png(64));
    let script = crate::prompt::script(&env, "s.toml", "[[step]]\ntext = \"seen\"\n");
    for model in ["echo", script.as_str()] {
        let run = env
            .run("ag-prompt", &["-m", model, "-a", "shot.png", "look"])
            .code(2);
        assert!(
            run.stderr.contains("does not take images"),
            "{model}: {}",
            run.stderr
        );
    }
    assert_eq!(
        env.log(&["ls", "-q"]).ok().stdout,
        "",
        "no session was made"
    );
    // Nor is anything written to an existing session.
    env.run("ag-prompt", &["-m", "echo", "hello"]).ok();
    let before = env.log(&["cat", "--json"]).ok().stdout;
    env.run("ag-prompt", &["-c", "-a", "shot.png", "look"])
        .code(2);
    assert_eq!(env.log(&["cat", "--json"]).ok().stdout, before);
}

#[test]
fn a_false_image_an_oversized_one_and_a_binary_file_are_refused_clearly() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    put(&env, "fake.png", b"just text pretending");
    let run = env
        .run("ag-prompt", &["-m", MODEL, "-a", "fake.png", "look"])
        .code(2);
    assert!(
        run.stderr.contains("fake.png") && run.stderr.contains("not a PNG, JPEG, GIF or WebP"),
        "{}",
        run.stderr
    );
    let max = ag::log::image::MAX_IMAGE_BYTES;
    put(&env, "huge.png", &png(max + 1));
    let run = env
        .run("ag-prompt", &["-m", MODEL, "-a", "huge.png", "look"])
        .code(2);
    assert!(
        run.stderr.contains("huge.png") && run.stderr.contains(&max.to_string()),
        "{}",
        run.stderr
    );
    put(&env, "blob.bin", &[0u8, 159, 146, 150, 0, 1]);
    let run = env
        .run("ag-prompt", &["-m", MODEL, "-a", "blob.bin", "look"])
        .code(2);
    assert!(run.stderr.contains("not UTF-8"), "{}", run.stderr);
    assert!(fake.requests().is_empty(), "nothing was sent");
    assert_eq!(env.log(&["ls", "-q"]).ok().stdout, "");
}

#[test]
fn image_chunks_are_checked_on_the_way_in_and_round_trip_through_export() {
    let env = TestEnv::new();
    let id = env.new_session("pictures", "see below");
    let data = ag::log::image::encode(&png(40));
    let image = |media: &str, data: &str| json!({"role": "user", "type": "image", "data": {"media_type": media, "data": data}});
    env.append(&id, &[image("image/png", &data), chunk::assistant("a png")]);
    for (bad, why) in [
        (image("image/bmp", &data), "media_type"),
        (image("image/png", "@@not base64@@"), "base64"),
        (image("image/jpeg", &data), "image/jpeg"),
        (
            json!({"role": "assistant", "type": "image", "data": {"media_type": "image/png", "data": data}}),
            "role",
        ),
    ] {
        let run = env
            .log_stdin(&["append", "-s", &id], format!("{bad}\n"))
            .code(1);
        assert!(run.stderr.contains(why), "{why}: {}", run.stderr);
    }
    let ndjson = env.log(&["export", &id, "--format", "ndjson"]).ok().stdout;
    let fresh = TestEnv::new();
    let path = fresh.cwd.join("s.ndjson");
    std::fs::write(&path, &ndjson).unwrap();
    fresh.log(&["import", path.to_str().unwrap()]).ok();
    let copy = fresh.log(&["ls", "-q"]).ok().stdout.trim().to_string();
    let images: Vec<Value> = fresh
        .chunks(&copy)
        .into_iter()
        .filter(|c| c["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["data"]["data"], data.as_str());
}
