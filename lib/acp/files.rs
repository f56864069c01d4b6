//! The editor's files (`fs/read_text_file`, `fs/write_text_file`): when the client offers
//! both, `read`, `write` and `edit` go through it, so the model reads what the person sees,
//! unsaved edits included, and its changes land in the editor's buffers, where the person can
//! undo them. The tools confine the path first, as always; only a file in the session's
//! directory is ever asked for.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
};

use super::rpc::Conn;

/// The editor of one session.
pub(crate) struct EditorFiles {
    conn: Arc<Conn>,
    /// The session's id as the editor knows it.
    session: String,
}

impl std::fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EditorFiles({})", self.session)
    }
}

impl EditorFiles {
    /// The editor's files, when it offers to read and write them.
    pub(crate) fn offered(
        caps: &ClientCapabilities,
        conn: &Arc<Conn>,
        session: &str,
    ) -> Option<Arc<dyn crate::tools::EditorFiles>> {
        (caps.fs.read_text_file && caps.fs.write_text_file).then(|| {
            Arc::new(EditorFiles {
                conn: conn.clone(),
                session: session.to_string(),
            }) as Arc<dyn crate::tools::EditorFiles>
        })
    }
}

impl crate::tools::EditorFiles for EditorFiles {
    fn read(&self, path: &Path) -> Result<String, String> {
        let req = ReadTextFileRequest::new(self.session.clone(), path.to_path_buf());
        let params = serde_json::to_value(req).expect("a read request serializes");
        let answer = self
            .conn
            .request("fs/read_text_file", params)
            .map_err(|e| e.message)?;
        serde_json::from_value::<ReadTextFileResponse>(answer)
            .map(|r| r.content)
            .map_err(|e| format!("the editor's answer is not a file's text: {e}"))
    }

    fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let req = WriteTextFileRequest::new(self.session.clone(), path.to_path_buf(), content);
        let params = serde_json::to_value(req).expect("a write request serializes");
        self.conn
            .request("fs/write_text_file", params)
            .map(|_| ())
            .map_err(|e| e.message)
    }
}
