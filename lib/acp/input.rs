//! A `session/prompt`'s content blocks as a turn's input: text as it is, images as the
//! person's images, an embedded resource (a file the editor attached, with its unsaved
//! text) as text marked with its URI, the way `ag-prompt -a` marks a file, and a resource link
//! as its URI for the model to read with its tools.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};

use crate::log::ChunkData;

/// What a prompt gives a turn.
#[derive(Debug, Default)]
pub(crate) struct Input {
    pub(crate) text: String,
    pub(crate) images: Vec<ChunkData>,
}

/// The turn's input, or what is wrong with a block (said to the client as invalid params).
pub(crate) fn read(blocks: &[ContentBlock]) -> Result<Input, String> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(img) => {
                crate::log::image::check(&img.mime_type, &img.data)
                    .map_err(|e| format!("prompt block {i} (image): {e}"))?;
                images.push(ChunkData::Image {
                    media_type: img.mime_type.clone(),
                    data: img.data.clone(),
                });
            }
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", t.uri, t.text));
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    return Err(format!(
                    "prompt block {i}: a binary resource ({}) is not taken; send text or an image",
                    b.uri
                ))
                }
                _ => {
                    return Err(format!(
                        "prompt block {i}: a resource of a kind ag does not know"
                    ))
                }
            },
            ContentBlock::ResourceLink(l) => parts.push(format!("@{}", l.uri)),
            ContentBlock::Audio(_) => {
                return Err(format!(
                    "prompt block {i}: audio is not taken (no capability for it)"
                ))
            }
            _ => {
                return Err(format!(
                    "prompt block {i}: a content block ag does not know"
                ))
            }
        }
    }
    Ok(Input {
        text: parts.join("\n\n"),
        images,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocks(v: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_resources_and_links_become_the_prompts_text() {
        let input = read(&blocks(json!([
            {"type": "text", "text": "explain this"},
            {"type": "resource", "resource": {"uri": "file:///w/a.rs", "text": "fn a() {}"}},
            {"type": "resource_link", "name": "b.rs", "uri": "file:///w/b.rs"}
        ])))
        .unwrap();
        assert_eq!(
            input.text,
            "explain this\n\n<file uri=\"file:///w/a.rs\">\nfn a() {}\n</file>\n\n@file:///w/b.rs"
        );
        assert!(input.images.is_empty());
    }

    #[test]
    fn audio_and_bad_images_are_refused_by_block() {
        let e = read(&blocks(json!([{"type": "text", "text": "x"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}])))
        .unwrap_err();
        assert!(e.starts_with("prompt block 1"), "{e}");
        let e = read(&blocks(
            json!([{"type": "image", "data": "!!", "mimeType": "image/png"}]),
        ))
        .unwrap_err();
        assert!(e.contains("image"), "{e}");
    }
}
