//! The request a test sends through the simulator, built fluently:
//! `Request::get("http://example.net/bar").header("key", "value").cookie("a", "1")`, and the
//! upstream response it meets ([`Response`], 200 with no body unless told) and the answers to
//! HTTP calls ([`HttpCallResponse`]).
//!
//! The request headers the module sees are, in order, `:authority`, `:path`, `:method`,
//! `:scheme` (from the URL and the method), the headers given, then one `cookie` header joining
//! the cookies given (`a=1; b=2`), as Envoy presents an HTTP/1.1 request.

/// An HTTP request for [`crate::Sim::request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub(crate) method: String,
    pub(crate) scheme: String,
    pub(crate) authority: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) cookies: Vec<(String, String)>,
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) trailers: Vec<(String, String)>,
    pub(crate) properties: Vec<(String, Vec<u8>)>,
    pub(crate) response: Response,
}

impl Request {
    /// A GET of `url` (`http://host[:port]/path?query`; a URL without a scheme is taken as
    /// `http://`, one without a path as `/`).
    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    /// A request with any method.
    pub fn new(method: &str, url: &str) -> Request {
        let (scheme, rest) = match url.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => ("http".to_string(), url),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        // A fragment never reaches the server.
        let path = match path.split_once('#') {
            Some((p, _)) => p.to_string(),
            None => path,
        };
        Request {
            method: method.to_string(),
            scheme,
            authority: authority.to_string(),
            path,
            headers: Vec::new(),
            cookies: Vec::new(),
            body: None,
            trailers: Vec::new(),
            properties: Vec::new(),
            response: Response::default(),
        }
    }

    pub fn method(mut self, method: &str) -> Request {
        self.method = method.to_string();
        self
    }

    /// Adds a header (a repeated name adds another value). `:authority` (or `host`, which Envoy
    /// turns into `:authority` for HTTP/1.1), `:path`, `:method` and `:scheme` replace the ones from
    /// the URL and method.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            ":authority" | "host" => self.authority = value.to_string(),
            ":path" => self.path = value.to_string(),
            ":method" => self.method = value.to_string(),
            ":scheme" => self.scheme = value.to_string(),
            _ => self.headers.push((name, value.to_string())),
        }
        self
    }

    /// Adds a cookie to the request's `cookie` header.
    pub fn cookie(mut self, name: &str, value: &str) -> Request {
        self.cookies.push((name.to_string(), value.to_string()));
        self
    }

    /// Gives the request a body (then `on_request_headers` sees `end_of_stream = false`).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = Some(body.into());
        self
    }

    /// Adds a request trailer.
    pub fn trailer(mut self, name: &str, value: &str) -> Request {
        self.trailers.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// Sets a property for this request only (dotted path, e.g. `source.address`).
    pub fn property(mut self, path: &str, value: impl Into<Vec<u8>>) -> Request {
        self.properties.push((path.to_string(), value.into()));
        self
    }

    /// The response the upstream gives if the request reaches it.
    pub fn response(mut self, response: Response) -> Request {
        self.response = response;
        self
    }

    /// The request headers as the module sees them in `on_request_headers`.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::with_capacity(5 + self.headers.len() + ROOM);
        headers.extend([
            (":authority".to_string(), self.authority.clone()),
            (":path".to_string(), self.path.clone()),
            (":method".to_string(), self.method.clone()),
            (":scheme".to_string(), self.scheme.clone()),
        ]);
        headers.extend(self.headers.iter().cloned());
        if !self.cookies.is_empty() {
            // Built by hand: `format!` and `join` per request were a few percent of `bench`'s time.
            let mut joined = String::new();
            for (i, (name, value)) in self.cookies.iter().enumerate() {
                if i > 0 {
                    joined.push_str("; ");
                }
                joined.push_str(name);
                joined.push('=');
                joined.push_str(value);
            }
            headers.push(("cookie".to_string(), joined));
        }
        headers
    }
}

/// Room in a stream's header maps for what a filter adds (Envoy's maps grow without moving what
/// they hold): a filter's header is then one push, not a copy of the whole map.
const ROOM: usize = 8;

/// The upstream's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub(crate) status: u32,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<Vec<u8>>,
}

impl Default for Response {
    fn default() -> Response {
        Response::new(200)
    }
}

impl Response {
    pub fn new(status: u32) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: None,
        }
    }
    pub fn header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Response {
        self.body = Some(body.into());
        self
    }
    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::with_capacity(1 + self.headers.len() + ROOM);
        headers.push((":status".to_string(), self.status.to_string()));
        headers.extend(self.headers.iter().cloned());
        headers
    }
}

/// The answer to an HTTP call the module dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCallResponse {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) trailers: Vec<(String, String)>,
}

impl HttpCallResponse {
    /// A response with this `:status`.
    pub fn new(status: u32) -> HttpCallResponse {
        HttpCallResponse {
            headers: vec![(":status".to_string(), status.to_string())],
            body: Vec::new(),
            trailers: Vec::new(),
        }
    }
    pub fn header(mut self, name: &str, value: &str) -> HttpCallResponse {
        self.headers.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> HttpCallResponse {
        self.body = body.into();
        self
    }
    pub fn trailer(mut self, name: &str, value: &str) -> HttpCallResponse {
        self.trailers.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_pseudo_headers() {
        let r = Request::get("http://example.net:8080/bar?x=1#frag")
            .header("Key", "v")
            .cookie("a", "1")
            .cookie("b", "2");
        assert_eq!(
            r.headers(),
            vec![
                (":authority".to_string(), "example.net:8080".to_string()),
                (":path".to_string(), "/bar?x=1".to_string()),
                (":method".to_string(), "GET".to_string()),
                (":scheme".to_string(), "http".to_string()),
                ("key".to_string(), "v".to_string()),
                ("cookie".to_string(), "a=1; b=2".to_string()),
            ]
        );
        assert_eq!(
            Request::get("http://a/").header("Host", "b.example.net").authority,
            "b.example.net"
        );
        assert_eq!(Request::get("example.net").path, "/");
        assert_eq!(Request::get("https://example.net?q").path, "/?q");
        assert_eq!(Request::get("https://example.net?q").scheme, "https");
    }
}
