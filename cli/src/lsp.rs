//! `cargo contracts lsp`: a language server over standard input and output, beside
//! rust-analyzer, on the unsaved texts of the editor (full-document sync). It publishes the
//! certain mismatches `check` reports as diagnostics (with their fixes as quick fixes), shows
//! the type of each tensor a `let` of a contracted function binds as an inlay hint, and the
//! type and provenance of a name or call on hover.
//!
//! Every change of a text analyses the workspace again, as `check` would with the editor's
//! texts, before the next request is answered; changes that come within 40 ms of each other
//! are one run. The workspace is the editor's workspace folders (`rootUri` or
//! `workspaceFolders`), read as `check FOLDER` reads them; without one, each open file's
//! package.

mod hover;
mod render;
mod session;
mod text;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{CodeActionRequest, HoverRequest, InlayHintRequest, Request as _};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, Diagnostic,
    HoverProviderCapability, InitializeParams, InitializeResult, OneOf, PublishDiagnosticsParams,
    ServerCapabilities, ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Url,
};
use serde::de::DeserializeOwned;

use crate::lsp::session::Session;
use crate::lsp::text::{Encoding, Lines};

/// How long after a change the server waits for the next one before it analyses again.
const BURST: std::time::Duration = std::time::Duration::from_millis(40);

/// Serves one editor over standard input and output until it sends `exit`: 0 after a
/// `shutdown`, 1 without one or when the connection breaks.
pub fn serve() -> ExitCode {
    let (connection, io_threads) = Connection::stdio();
    match Server::start(&connection).and_then(|server| server.run()) {
        Ok(code) => {
            // The reader has stopped at `exit`; the writer stops once the connection's sender
            // is dropped, after writing what is queued.
            drop(connection);
            if let Err(error) = io_threads.join() {
                eprintln!("cargo contracts lsp: {error}");
                return ExitCode::from(1);
            }
            code
        }
        Err(error) => {
            eprintln!("cargo contracts lsp: {error}");
            // The error's response (to a bad `initialize`) is queued: the writer writes it once
            // the sender is dropped. The reader may wait on the client for ever, so it is not
            // joined: the writer is given a moment instead.
            drop(connection);
            std::thread::sleep(std::time::Duration::from_millis(200));
            ExitCode::from(1)
        }
    }
}

/// Why serving stopped before `exit`.
type Stop = String;

/// The connection and the session.
struct Server<'a> {
    /// The channels to and from the client.
    connection: &'a Connection,
    /// The open files and the last analysis.
    session: Session,
    /// What was last published for each URI (only changes are sent again).
    published: BTreeMap<Url, Vec<Diagnostic>>,
    /// The files the last run could not read or parse, as last logged.
    problems: Vec<String>,
}

impl std::fmt::Debug for Server<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl<'a> Server<'a> {
    /// Answers `initialize` with the server's capabilities (UTF-8 positions where the client
    /// offers them), the workspace folders it gives kept for the session.
    fn start(connection: &'a Connection) -> Result<Server<'a>, Stop> {
        let (id, params) = connection
            .initialize_start()
            .map_err(|error| error.to_string())?;
        let params: InitializeParams = match serde_json::from_value(params) {
            Ok(params) => params,
            Err(error) => {
                let message = format!("invalid `initialize` params: {error}");
                let response = Response::new_err(id, ErrorCode::InvalidParams as i32, message);
                let _ = connection.sender.send(response.into());
                return Err("the client sent invalid `initialize` params".to_string());
            }
        };
        let encoding = Encoding::negotiate(
            params
                .capabilities
                .general
                .as_ref()
                .and_then(|general| general.position_encodings.as_deref()),
        );
        let result = InitializeResult {
            capabilities: capabilities(encoding),
            server_info: Some(ServerInfo {
                name: "cargo-contracts".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
        };
        let response = Response::new_ok(id, result);
        connection
            .sender
            .send(response.into())
            .map_err(|error| error.to_string())?;
        Ok(Server {
            connection,
            session: Session::new(encoding, roots(&params)),
            published: BTreeMap::new(),
            problems: Vec::new(),
        })
    }

    /// Handles messages until `exit`; the exit code.
    fn run(mut self) -> Result<ExitCode, Stop> {
        loop {
            // After a change, what comes within a few milliseconds is read before analysing
            // again: a burst of changes (a keystroke each) is one run. (The connection hands
            // messages over one at a time: none waits queued for a `try_recv`.)
            let message = match self.session.is_stale() {
                true => match self.connection.receiver.recv_timeout(BURST) {
                    Ok(message) => message,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        self.refresh()?;
                        continue;
                    }
                    Err(_) => return Ok(ExitCode::from(1)),
                },
                false => match self.connection.receiver.recv() {
                    Ok(message) => message,
                    Err(_) => return Ok(ExitCode::from(1)),
                },
            };
            match message {
                Message::Request(request) => {
                    let shutdown = self
                        .connection
                        .handle_shutdown(&request)
                        .map_err(|error| error.to_string())?;
                    if shutdown {
                        return Ok(ExitCode::SUCCESS);
                    }
                    self.refresh()?;
                    let response = self.answer(request);
                    self.send(response.into())?;
                }
                // `exit` before `shutdown`.
                Message::Notification(notification) if notification.method == "exit" => {
                    return Ok(ExitCode::from(1));
                }
                Message::Notification(notification) => self.notified(notification),
                // The server sends no requests.
                Message::Response(_) => {}
            }
        }
    }

    /// Sends a message to the client; a closed connection stops the server.
    fn send(&self, message: Message) -> Result<(), Stop> {
        self.connection
            .sender
            .send(message)
            .map_err(|_| "the connection to the client is closed".to_string())
    }

    /// Analyses again if a text changed, and publishes the diagnostics that changed: the new
    /// ones, and an empty list for each file whose findings went away.
    fn refresh(&mut self) -> Result<(), Stop> {
        let Some(run) = self.session.refresh() else {
            return Ok(());
        };
        let mismatches = match run.findings {
            1 => "1 certain mismatch".to_string(),
            n => format!("{n} certain mismatches"),
        };
        let files = match run.files {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        };
        eprintln!(
            "cargo contracts lsp: {files} analysed in {} ms: {mismatches}",
            run.took.as_millis()
        );
        if run.problems != self.problems {
            for problem in &run.problems {
                eprintln!("cargo contracts lsp: {problem}");
            }
            self.problems = run.problems;
        }
        let mut current = render::diagnostics(&self.session);
        let gone: Vec<Url> = self
            .published
            .keys()
            .filter(|uri| !current.contains_key(*uri))
            .cloned()
            .collect();
        for uri in gone {
            current.insert(uri, Vec::new());
        }
        for (uri, diagnostics) in &current {
            if self.published.get(uri) == Some(diagnostics)
                || (diagnostics.is_empty() && !self.published.contains_key(uri))
            {
                continue;
            }
            let params = PublishDiagnosticsParams {
                uri: uri.clone(),
                diagnostics: diagnostics.clone(),
                version: self.session.version(uri),
            };
            self.send(Notification::new(PublishDiagnostics::METHOD.to_string(), params).into())?;
        }
        current.retain(|_, diagnostics| !diagnostics.is_empty());
        self.published = current;
        Ok(())
    }

    /// The response to a request: its result, `InvalidParams` where its params do not read,
    /// `MethodNotFound` for a method the server does not serve.
    fn answer(&self, request: Request) -> Response {
        let Request { id, method, params } = request;
        let session = &self.session;
        match method.as_str() {
            InlayHintRequest::METHOD => respond(id, params, |p: lsp_types::InlayHintParams| {
                render::inlay_hints(session, &p.text_document.uri, p.range)
            }),
            HoverRequest::METHOD => respond(id, params, |p: lsp_types::HoverParams| {
                let at = p.text_document_position_params;
                hover::hover(session, &at.text_document.uri, at.position)
            }),
            CodeActionRequest::METHOD => respond(id, params, |p: lsp_types::CodeActionParams| {
                let wanted = p.context.only.as_ref().is_none_or(|only| {
                    only.iter()
                        .any(|kind| CodeActionKind::QUICKFIX.as_str().starts_with(kind.as_str()))
                });
                match wanted {
                    true => render::code_actions(session, &p.text_document.uri, p.range),
                    false => Vec::new(),
                }
            }),
            _ => Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("`cargo contracts lsp` does not serve `{method}`"),
            ),
        }
    }

    /// Takes in a notification: the documents' texts; anything else is ignored.
    fn notified(&mut self, notification: Notification) {
        let Notification { method, params } = notification;
        match method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Some(p) = read::<lsp_types::DidOpenTextDocumentParams>(&method, params) {
                    let document = p.text_document;
                    self.session
                        .set_text(&document.uri, document.version, document.text);
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Some(p) = read::<lsp_types::DidChangeTextDocumentParams>(&method, params) {
                    let document = p.text_document;
                    let text = self.session.text(&document.uri).map(str::to_string);
                    // Full sync sends the whole text; a client that sends ranges anyway gets
                    // them applied in order.
                    let mut text = text.unwrap_or_default();
                    for change in p.content_changes {
                        match change.range {
                            None => text = change.text,
                            Some(range) => {
                                let lines = Lines::new(&text, self.session.encoding);
                                let start = lines.offset_or_end(range.start);
                                let end = lines.offset_or_end(range.end).max(start);
                                text.replace_range(start..end, &change.text);
                            }
                        }
                    }
                    self.session.set_text(&document.uri, document.version, text);
                }
            }
            // A file saved, or changed on disk by something else (a checkout, a formatter).
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => self.session.touch(),
            DidCloseTextDocument::METHOD => {
                if let Some(p) = read::<lsp_types::DidCloseTextDocumentParams>(&method, params) {
                    self.session.close(&p.text_document.uri);
                }
            }
            // `initialized`, `$/cancelRequest` (every request is answered before the next is
            // read), configuration.
            _ => {}
        }
    }
}

/// The server's capabilities: full-document sync, inlay hints, hovers and quick fixes.
fn capabilities(encoding: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::FULL),
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                ..TextDocumentSyncOptions::default()
            },
        )),
        inlay_hint_provider: Some(OneOf::Left(true)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        ..ServerCapabilities::default()
    }
}

/// The workspace folders of `initialize` (`workspaceFolders`, else `rootUri`, else
/// `rootPath`), as paths.
#[allow(
    deprecated,
    reason = "`rootUri` and `rootPath` are what older clients send"
)]
fn roots(params: &InitializeParams) -> Vec<PathBuf> {
    if let Some(folders) = &params.workspace_folders
        && !folders.is_empty()
    {
        return folders
            .iter()
            .filter_map(|folder| folder.uri.to_file_path().ok())
            .collect();
    }
    if let Some(uri) = &params.root_uri {
        return uri.to_file_path().ok().into_iter().collect();
    }
    params.root_path.iter().map(PathBuf::from).collect()
}

/// The response of `answer` to the params read as `P`, or `InvalidParams`.
fn respond<P: DeserializeOwned, R: serde::Serialize>(
    id: RequestId,
    params: serde_json::Value,
    answer: impl FnOnce(P) -> R,
) -> Response {
    match serde_json::from_value(params) {
        Ok(params) => match serde_json::to_value(answer(params)) {
            Ok(result) => Response::new_ok(id, result),
            Err(error) => Response::new_err(id, ErrorCode::InternalError as i32, error.to_string()),
        },
        Err(error) => Response::new_err(
            id,
            ErrorCode::InvalidParams as i32,
            format!("invalid params: {error}"),
        ),
    }
}

/// A notification's params read as `P`; `None` (logged) where they do not read.
fn read<P: DeserializeOwned>(method: &str, params: serde_json::Value) -> Option<P> {
    match serde_json::from_value(params) {
        Ok(params) => Some(params),
        Err(error) => {
            eprintln!("cargo contracts lsp: invalid `{method}` params ignored: {error}");
            None
        }
    }
}
