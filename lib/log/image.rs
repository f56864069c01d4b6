//! Images in the log: the four formats providers take (PNG, JPEG, GIF, WebP), told apart by
//! their first bytes, and an image chunk's payload (its media type and base64 bytes).
//!
//! An image is a `user/image` chunk, `{media_type, data}` with the bytes in base64: the chunk
//! holds the bytes it stands for, so a fork shares it for free, an export carries it, and the
//! fold stays pure (nothing outside the chunks is read to build a request).

use base64::Engine;

/// The largest image, in bytes: 5 MiB once base64-encoded, the most an Anthropic request
/// takes for one image (OpenAI takes more).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

/// An image format a provider takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageType {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageType {
    pub(crate) const ALL: [ImageType; 4] = [
        ImageType::Png,
        ImageType::Jpeg,
        ImageType::Gif,
        ImageType::Webp,
    ];

    pub(crate) fn media_type(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Gif => "image/gif",
            ImageType::Webp => "image/webp",
        }
    }

    pub(crate) fn parse(media_type: &str) -> Option<ImageType> {
        ImageType::ALL
            .into_iter()
            .find(|t| t.media_type() == media_type)
    }

    /// The format `bytes` are in, by their signature (never by a file name).
    pub(crate) fn sniff(bytes: &[u8]) -> Option<ImageType> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageType::Png)
        } else if bytes.starts_with(b"\xff\xd8\xff") {
            Some(ImageType::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageType::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageType::Webp)
        } else {
            None
        }
    }

    /// The format a file's extension names, if it names one of these.
    pub(crate) fn by_extension(path: &std::path::Path) -> Option<ImageType> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(ImageType::Png),
            "jpg" | "jpeg" => Some(ImageType::Jpeg),
            "gif" => Some(ImageType::Gif),
            "webp" => Some(ImageType::Webp),
            _ => None,
        }
    }
}

/// How an image shows where it cannot be drawn: `[image: image/png, 1234 bytes]`.
pub(crate) fn label(media_type: &str, data: &str) -> String {
    format!("[image: {media_type}, {} bytes]", decoded_len(data))
}

/// `bytes` as base64 (standard alphabet, padded), as providers take it.
pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// How many bytes base64 `data` stands for (without decoding it).
pub(crate) fn decoded_len(data: &str) -> usize {
    let pad = data.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (data.len() / 4 * 3).saturating_sub(pad)
}

/// Check an image chunk's fields: a known media type, and data that is base64 of bytes in
/// that format, no larger than [`MAX_IMAGE_BYTES`].
pub(crate) fn check(media_type: &str, data: &str) -> Result<(), String> {
    let Some(ty) = ImageType::parse(media_type) else {
        return Err(format!(
            "`media_type` must be one of image/png, image/jpeg, image/gif, image/webp, found {media_type:?}"
        ));
    };
    if decoded_len(data) > MAX_IMAGE_BYTES {
        return Err(format!(
            "the image is {} bytes, more than the {MAX_IMAGE_BYTES} an image may have",
            decoded_len(data)
        ));
    }
    // The signature is in the first bytes: decoding a short prefix is enough to check it.
    let head = &data[..data.len().min(16)];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(head)
        .map_err(|_| "`data` is not base64".to_string())?;
    if !data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        || !data.len().is_multiple_of(4)
    {
        return Err("`data` is not base64".into());
    }
    if ImageType::sniff(&bytes) != Some(ty) {
        return Err(format!("`data` does not hold a {media_type} image"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        assert_eq!(
            ImageType::sniff(b"\x89PNG\r\n\x1a\nrest"),
            Some(ImageType::Png)
        );
        assert_eq!(ImageType::sniff(b"\xff\xd8\xff\xe0"), Some(ImageType::Jpeg));
        assert_eq!(ImageType::sniff(b"GIF89a.."), Some(ImageType::Gif));
        assert_eq!(
            ImageType::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageType::Webp)
        );
        assert_eq!(ImageType::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(ImageType::sniff(b"plain text"), None);
    }

    #[test]
    fn a_chunk_must_hold_base64_of_its_own_format() {
        let png = encode(b"\x89PNG\r\n\x1a\n0123456789");
        assert!(check("image/png", &png).is_ok());
        assert_eq!(decoded_len(&png), 18);
        assert!(check("image/jpeg", &png)
            .unwrap_err()
            .contains("image/jpeg"));
        assert!(check("image/bmp", &png).unwrap_err().contains("media_type"));
        assert!(check("image/png", "not base64!").is_err());
        let huge = "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 4);
        assert!(check("image/png", &huge).unwrap_err().contains("more than"));
    }
}
