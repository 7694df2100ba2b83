//! The REST route table: every route is one row, with its paths, what a client needs
//! (`Access`), the metrics route it is counted under and a handler per method. Routing
//! (`rest::handle`), auth and metrics all read it, so that a path's access is decided by
//! the same match that picks its handler. To add a route, add a row here (the snapshot
//! test below then changes with it).
//!
//! Paths are matchit patterns on the path with Seldon's ingress prefix
//! (`/seldon/<namespace>/<deployment>`) stripped. A match with an empty `{name}` or
//! `{version}` is no match. A path no row matches is unknown: 404, behind the predict
//! scope, so that a 404 says nothing to a client without a token.
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::LazyLock;

use http::{Method, Request};
use hyper::body::Incoming;

use super::body::Reply;
use super::{
    components, health, kserve, login, publish, runtime_settings, seldon, shared_memory, stream,
    torchserve, torchserve_openapi, v2,
};
use crate::app::App;
use crate::auth::Access;
use crate::error::{Kind, ServeError};
use crate::metrics;
use crate::observe::Observed;
use crate::runner::Component;

/// What a handler gets.
pub(super) struct Ctx<'a> {
    pub app: &'a App,
    pub req: Request<Incoming>,
    pub obs: &'a mut Observed,
    /// The path, its ingress prefix stripped.
    pub path: &'a str,
    /// The path's `{name}` and `{version}`; "" where the pattern has none.
    pub name: &'a str,
    pub version: &'a str,
    /// The client's address (failed logins are counted against it).
    pub peer: IpAddr,
    /// The listener the request came in on.
    pub port: Port,
}

pub(super) type Handled<'a> = Pin<Box<dyn Future<Output = Result<Reply, ServeError>> + Send + 'a>>;
pub(super) type Handler = for<'a> fn(Ctx<'a>) -> Handled<'a>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Get,
    Post,
    Put,
    Delete,
    Options,
    /// Every method (the handler answers them all alike).
    Any,
}

impl Verb {
    fn takes(self, method: &Method) -> bool {
        match self {
            Verb::Get => method == Method::GET,
            Verb::Post => method == Method::POST,
            Verb::Put => method == Method::PUT,
            Verb::Delete => method == Method::DELETE,
            Verb::Options => method == Method::OPTIONS,
            Verb::Any => true,
        }
    }
}

/// What a 405 says.
#[derive(Debug, Clone, Copy)]
pub(super) enum WrongMethod {
    /// "{method} is not allowed on {path}".
    Plain,
    /// The same, then ": " and this.
    Hint(&'static str),
    /// This instead.
    Say(&'static str),
}

/// Which REST listener a connection came in on: the REST port, TorchServe's
/// management port (`management_port`) when it is a port of its own, or the port of
/// KServe's wrapper in TorchServe's KServe image (`kserve_port`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    Main,
    Management,
    KServe,
    /// The REST port and the management port (TorchServe's API description).
    MainAndManagement,
}

/// One route.
pub(super) struct Route {
    pub paths: &'static [&'static str],
    pub access: Access,
    /// What a POST needs where it differs from `access`: a route whose GET reads a
    /// setting and whose POST changes the server (Triton's trace and logging settings).
    pub post_access: Option<Access>,
    pub metric: metrics::Route,
    /// Counted under the default model's series, as the Seldon protocol's routes, which
    /// serve it (others count under the model their handler finds, or none).
    pub default_model: bool,
    pub methods: &'static [(Verb, Handler)],
    pub wrong_method: WrongMethod,
    /// Served only in this dialect (`v2_dialect`), its errors in its shape; `None`:
    /// served in every dialect, errors in the path's protocol's shape.
    pub dialect: Option<&'static str>,
    /// The listener that serves it (`Management`: also the REST port, when the
    /// management API shares it).
    pub port: Port,
}

impl Route {
    pub fn handler(&self, method: &Method) -> Option<Handler> {
        self.methods
            .iter()
            .find(|(verb, _)| verb.takes(method))
            .map(|&(_, h)| h)
    }

    pub fn not_allowed(&self, method: &Method, path: &str) -> ServeError {
        let message = match self.wrong_method {
            WrongMethod::Plain => format!("{method} is not allowed on {path}"),
            WrongMethod::Hint(hint) => format!("{method} is not allowed on {path}: {hint}"),
            WrongMethod::Say(say) => say.to_owned(),
        };
        ServeError::new(Kind::MethodNotAllowed, message)
    }
}

/// A row of the table, with the most common settings.
const fn route(
    paths: &'static [&'static str],
    access: Access,
    metric: metrics::Route,
    methods: &'static [(Verb, Handler)],
) -> Route {
    Route {
        paths,
        access,
        post_access: None,
        metric,
        default_model: false,
        methods,
        wrong_method: WrongMethod::Plain,
        dialect: None,
        port: Port::Main,
    }
}

/// A route of TorchServe's inference API (`inferwire torchserve` only).
const fn torchserve(
    paths: &'static [&'static str],
    access: Access,
    metric: metrics::Route,
    methods: &'static [(Verb, Handler)],
) -> Route {
    Route {
        dialect: Some("torchserve"),
        wrong_method: WrongMethod::Say(
            "Requested method is not allowed, please refer to API document.",
        ),
        ..route(paths, access, metric, methods)
    }
}

/// A Seldon protocol route, served by the default model.
const fn seldon(
    paths: &'static [&'static str],
    access: Access,
    metric: metrics::Route,
    methods: &'static [(Verb, Handler)],
) -> Route {
    Route {
        default_model: true,
        ..route(paths, access, metric, methods)
    }
}

use metrics::Route as M;
use Access as A;
use Verb::{Any, Delete, Get, Options, Post, Put};

/// A route of TorchServe's management API (its own port).
const fn torchserve_management(
    paths: &'static [&'static str],
    access: Access,
    methods: &'static [(Verb, Handler)],
) -> Route {
    Route {
        port: Port::Management,
        ..torchserve(paths, access, M::Other, methods)
    }
}

/// The table.
pub(super) static ROUTES: &[Route] = &[
    // TorchServe's management API: reading is open as TorchServe's (its token aside),
    // registering and unregistering need what inferwire's repository API needs.
    torchserve_management(
        &["/models"],
        A::OPEN,
        &[
            (Get, |c| Box::pin(torchserve::list(c.app, c.req))),
            (Post, |c| Box::pin(torchserve::register(c.app, c.req))),
        ],
    ),
    // TorchServe's API description (OpenAPI), of the port asked.
    Route {
        port: Port::MainAndManagement,
        ..torchserve(
            &["/"],
            A::OPEN,
            M::Metadata,
            &[(Options, |c| {
                Box::pin(async move { Ok(torchserve_openapi::listing(c.app, c.port)) })
            })],
        )
    },
    Route {
        port: Port::MainAndManagement,
        ..torchserve(
            &["/api-description"],
            A::OPEN,
            M::Metadata,
            &[(Any, |c| {
                Box::pin(async move { Ok(torchserve_openapi::listing(c.app, c.port)) })
            })],
        )
    },
    torchserve_management(
        &["/models/{name}", "/models/{name}/{version}"],
        A::OPEN,
        &[
            (Get, |c| {
                Box::pin(torchserve::describe(c.app, c.req, c.name, c.version))
            }),
            (Options, |c| {
                Box::pin(torchserve_openapi::model_management(
                    c.app, c.name, c.version,
                ))
            }),
            (Delete, |c| {
                Box::pin(torchserve::unregister(c.app, c.req, c.name, c.version))
            }),
            (Put, |c| {
                Box::pin(torchserve::scale(c.app, c.req, c.name, c.version))
            }),
        ],
    ),
    torchserve_management(
        &["/models/{name}/{version}/set-default"],
        A::OPEN,
        &[(Put, |c| {
            Box::pin(torchserve::set_default(c.app, c.req, c.name, c.version))
        })],
    ),
    // The token API checks the API key itself.
    torchserve_management(
        &["/token"],
        A::OPEN,
        &[(Get, |c| Box::pin(torchserve::token(c.app, c.req)))],
    ),
    // KServe's v1 protocol as TorchServe's KServe image serves it (the wrapper's port,
    // and TorchServe's inference port, as its frontend).
    Route {
        port: Port::KServe,
        ..torchserve(
            &["/v1/models"],
            A::PREDICT,
            M::Metadata,
            &[(Get, |c| Box::pin(kserve::list(c.app)))],
        )
    },
    Route {
        port: Port::KServe,
        post_access: Some(A::PREDICT),
        ..torchserve(
            &["/v1/models/{name}"],
            A::OPEN,
            M::Infer,
            &[
                (Get, |c| Box::pin(kserve::v1(c.app, c.req, c.name, c.obs))),
                (Post, |c| Box::pin(kserve::v1(c.app, c.req, c.name, c.obs))),
            ],
        )
    },
    // TorchServe's inference API.
    torchserve(
        &["/ping"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(torchserve::ping(c.app, c.req)))],
    ),
    torchserve(
        &["/predictions/{name}", "/predictions/{name}/{version}"],
        A::PREDICT,
        M::Infer,
        &[
            (Post, |c| {
                Box::pin(torchserve::predict(
                    c.app, c.req, c.name, c.version, c.obs, false,
                ))
            }),
            (Put, |c| {
                Box::pin(torchserve::predict(
                    c.app, c.req, c.name, c.version, c.obs, false,
                ))
            }),
            (Options, |c| {
                Box::pin(torchserve_openapi::model_inference(
                    c.app, c.name, c.version,
                ))
            }),
        ],
    ),
    torchserve(
        &["/explanations/{name}", "/explanations/{name}/{version}"],
        A::PREDICT,
        M::Infer,
        &[(Post, |c| {
            Box::pin(torchserve::predict(
                c.app, c.req, c.name, c.version, c.obs, true,
            ))
        })],
    ),
    // Seldon's protocol, with the aliases its clients use.
    seldon(
        &["/api/v1.0/predictions", "/api/v0.1/predictions", "/predict"],
        A::PREDICT,
        M::Predict,
        &[
            (Post, |c| {
                Box::pin(seldon::predict(c.app, c.req, c.obs, None))
            }),
            (Get, |c| {
                Box::pin(seldon::predict_query(c.app, c.req, c.obs))
            }),
        ],
    ),
    seldon(
        &["/api/v1.0/feedback", "/api/v0.1/feedback"],
        A::PREDICT,
        M::Feedback,
        &[(Post, |c| Box::pin(seldon::feedback(c.app, c.req)))],
    ),
    // The component-level feedback route takes GET `?json=` too, as Seldon's wrapper does.
    seldon(
        &["/send-feedback"],
        A::PREDICT,
        M::Feedback,
        &[
            (Post, |c| Box::pin(seldon::feedback(c.app, c.req))),
            (Get, |c| Box::pin(components::feedback_query(c.app, c.req))),
        ],
    ),
    // The other graph component types' routes (seldon-core's wrapper serves them all on
    // every component, by GET or POST).
    seldon(
        &["/transform-input"],
        A::PREDICT,
        M::TransformInput,
        &[
            (Post, |c| {
                Box::pin(components::one(
                    c.app,
                    c.req,
                    c.obs,
                    Component::TransformInput,
                ))
            }),
            (Get, |c| {
                Box::pin(components::one(
                    c.app,
                    c.req,
                    c.obs,
                    Component::TransformInput,
                ))
            }),
        ],
    ),
    seldon(
        &["/transform-output"],
        A::PREDICT,
        M::TransformOutput,
        &[
            (Post, |c| {
                Box::pin(components::one(
                    c.app,
                    c.req,
                    c.obs,
                    Component::TransformOutput,
                ))
            }),
            (Get, |c| {
                Box::pin(components::one(
                    c.app,
                    c.req,
                    c.obs,
                    Component::TransformOutput,
                ))
            }),
        ],
    ),
    seldon(
        &["/route"],
        A::PREDICT,
        M::Route,
        &[
            (Post, |c| {
                Box::pin(components::one(c.app, c.req, c.obs, Component::Route))
            }),
            (Get, |c| {
                Box::pin(components::one(c.app, c.req, c.obs, Component::Route))
            }),
        ],
    ),
    seldon(
        &["/aggregate"],
        A::PREDICT,
        M::Aggregate,
        &[
            (Post, |c| {
                Box::pin(components::aggregate(c.app, c.req, c.obs))
            }),
            (Get, |c| {
                Box::pin(components::aggregate(c.app, c.req, c.obs))
            }),
        ],
    ),
    seldon(
        &["/health/ping", "/api/v1.0/health/ping"],
        A::OPEN,
        M::Health,
        &[(Get, |_| Box::pin(health::ping()))],
    ),
    seldon(
        &["/health/status", "/api/v1.0/health/status"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(seldon::health_status(c.app)))],
    ),
    seldon(
        &["/live"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(health::live(c.app)))],
    ),
    seldon(
        &["/ready"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(health::ready(c.app)))],
    ),
    seldon(
        // Every path under /api/v1.0/metadata, as Seldon's wrapper answers.
        &[
            "/metadata",
            "/api/v1.0/metadata",
            "/api/v1.0/metadata{*rest}",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |c| Box::pin(seldon::metadata(c.app)))],
    ),
    route(
        &["/seldon.json"],
        A::PREDICT,
        M::Metadata,
        &[(Get, |_| Box::pin(seldon::openapi()))],
    ),
    route(
        &["/metrics", "/prometheus"],
        A::OPEN,
        M::Other,
        &[(Get, |c| Box::pin(health::metrics(c.app)))],
    ),
    // A published model's own route.
    route(
        &["/api/{name}/{version}"],
        A::PREDICT,
        M::Predict,
        &[(Post, |c| {
            Box::pin(seldon::predict_named(
                c.app, c.req, c.obs, c.name, c.version,
            ))
        })],
    ),
    // Seldon's own prefixes are no model's name.
    route(
        &["/api/v1.0/{*rest}", "/api/v0.1/{*rest}"],
        A::PREDICT,
        M::Other,
        &[(Any, |c| Box::pin(no_route(c)))],
    ),
    Route {
        wrong_method: WrongMethod::Say("POST {\"username\", \"password\"} to /login"),
        ..route(
            &["/login"],
            A::OPEN,
            M::Other,
            &[(Post, |c| Box::pin(login::login(c.app, c.req, c.peer)))],
        )
    },
    // Publishing.
    Route {
        wrong_method: WrongMethod::Hint("GET lists, POST .../NAME/VERSION publishes"),
        ..route(
            &["/api/v1.0/publish", "/api/v1.0/publish/"],
            A::REPOSITORY_WRITE,
            M::Other,
            &[(Get, |c| Box::pin(publish::list(c.app)))],
        )
    },
    Route {
        wrong_method: WrongMethod::Hint("POST publishes, DELETE removes"),
        ..route(
            &[
                "/api/v1.0/publish/{name}/{version}",
                "/api/v1.0/publish/{name}/{version}/",
            ],
            A::REPOSITORY_WRITE,
            M::Other,
            &[
                (Post, |c| {
                    Box::pin(publish::publish(c.app, c.req, c.name, c.version))
                }),
                (Delete, |c| {
                    Box::pin(publish::delete(c.app, c.name, c.version))
                }),
            ],
        )
    },
    route(
        &[
            "/api/v1.0/publish/{name}",
            "/api/v1.0/publish/{name}/",
            "/api/v1.0/publish/{name}/{version}/{*rest}",
        ],
        A::REPOSITORY_WRITE,
        M::Other,
        &[(Any, |c| Box::pin(publish::misplaced(c.path)))],
    ),
    // The Open Inference Protocol (V2).
    route(
        &["/v2", "/v2/"],
        A::OPEN,
        M::Metadata,
        &[(Get, |c| Box::pin(v2::server(c.app)))],
    ),
    route(
        &["/v2/health/live"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(v2::live(c.app)))],
    ),
    route(
        &["/v2/health/ready"],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(v2::ready(c.app)))],
    ),
    route(
        &[
            "/v2/docs/dataplane.json",
            "/v2/models/{name}/docs/dataplane.json",
            "/v2/models/{name}/versions/{version}/docs/dataplane.json",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |_| Box::pin(v2::openapi()))],
    ),
    route(
        &[
            "/v2/docs",
            "/v2/models/{name}/docs",
            "/v2/models/{name}/versions/{version}/docs",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |_| Box::pin(v2::docs_page()))],
    ),
    route(
        &[
            "/v2/models/{name}",
            "/v2/models/{name}/",
            "/v2/models/{name}/versions/{version}",
            "/v2/models/{name}/versions/{version}/",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |c| Box::pin(v2::model(c.app, c.name, c.version)))],
    ),
    route(
        &[
            "/v2/models/{name}/ready",
            "/v2/models/{name}/versions/{version}/ready",
        ],
        A::OPEN,
        M::Health,
        &[(Get, |c| Box::pin(v2::model_ready(c.app, c.name, c.version)))],
    ),
    route(
        &[
            "/v2/models/{name}/infer",
            "/v2/models/{name}/versions/{version}/infer",
        ],
        A::PREDICT,
        M::Infer,
        &[(Post, |c| {
            // TorchServe's frontend hands the body to the handler (its envelope reads it).
            if c.app.config.dialect.name() == "torchserve" {
                Box::pin(kserve::v2_infer(c.app, c.req, c.name, c.version, c.obs))
            } else {
                Box::pin(v2::infer(c.app, c.req, c.name, c.version, c.obs))
            }
        })],
    ),
    // Streamed replies (server-sent events) and Triton's generate extension.
    route(
        &[
            "/v2/models/{name}/infer_stream",
            "/v2/models/{name}/versions/{version}/infer_stream",
        ],
        A::PREDICT,
        M::InferStream,
        &[(Post, |c| {
            Box::pin(stream::infer_stream(c.app, c.req, c.name, c.version, c.obs))
        })],
    ),
    route(
        &[
            "/v2/models/{name}/generate_stream",
            "/v2/models/{name}/versions/{version}/generate_stream",
        ],
        A::PREDICT,
        M::InferStream,
        &[(Post, |c| {
            Box::pin(stream::generate_stream(
                c.app, c.req, c.name, c.version, c.obs,
            ))
        })],
    ),
    route(
        &[
            "/v2/models/{name}/generate",
            "/v2/models/{name}/versions/{version}/generate",
        ],
        A::PREDICT,
        M::Generate,
        &[(Post, |c| {
            Box::pin(stream::generate(c.app, c.req, c.name, c.version, c.obs))
        })],
    ),
    // Triton's statistics and model configuration extensions.
    route(
        &[
            "/v2/models/stats",
            "/v2/models/{name}/stats",
            "/v2/models/{name}/versions/{version}/stats",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |c| Box::pin(v2::stats(c.app, c.name, c.version)))],
    ),
    route(
        &[
            "/v2/models/{name}/config",
            "/v2/models/{name}/versions/{version}/config",
        ],
        A::PREDICT,
        M::Metadata,
        &[(Get, |c| Box::pin(v2::config(c.app, c.name, c.version)))],
    ),
    route(
        &["/v2/repository/index"],
        A::REPOSITORY_READ,
        M::Other,
        &[(Post, |c| Box::pin(v2::repository_index(c.app, c.req)))],
    ),
    route(
        &["/v2/repository/models/{name}/load"],
        A::REPOSITORY_WRITE,
        M::Other,
        &[(Post, |c| Box::pin(v2::load(c.app, c.req, c.name)))],
    ),
    route(
        &["/v2/repository/models/{name}/unload"],
        A::REPOSITORY_WRITE,
        M::Other,
        &[(Post, |c| Box::pin(v2::unload(c.app, c.name)))],
    ),
    // Triton's shared-memory extension (system shared memory off unless configured).
    route(
        &[
            "/v2/systemsharedmemory/status",
            "/v2/systemsharedmemory/region/{name}/status",
        ],
        A::PREDICT,
        M::Other,
        &[(Get, |c| Box::pin(shared_memory::status(c.app, c.name)))],
    ),
    route(
        &["/v2/systemsharedmemory/region/{name}/register"],
        crate::shared_memory::REGISTER,
        M::Other,
        &[(Post, |c| {
            Box::pin(shared_memory::register(c.app, c.req, c.name))
        })],
    ),
    route(
        &[
            "/v2/systemsharedmemory/unregister",
            "/v2/systemsharedmemory/region/{name}/unregister",
        ],
        crate::shared_memory::REGISTER,
        M::Other,
        &[(Post, |c| Box::pin(shared_memory::unregister(c.app, c.name)))],
    ),
    route(
        &[
            "/v2/cudasharedmemory/status",
            "/v2/cudasharedmemory/region/{name}/status",
        ],
        A::PREDICT,
        M::Other,
        &[(Get, |c| Box::pin(shared_memory::cuda_status(c.name)))],
    ),
    route(
        &["/v2/cudasharedmemory/region/{name}/register"],
        crate::shared_memory::REGISTER,
        M::Other,
        &[(Post, |_| Box::pin(shared_memory::cuda_register()))],
    ),
    route(
        &[
            "/v2/cudasharedmemory/unregister",
            "/v2/cudasharedmemory/region/{name}/unregister",
        ],
        crate::shared_memory::REGISTER,
        M::Other,
        &[(Post, |_| Box::pin(shared_memory::cuda_unregister()))],
    ),
    // Triton's trace and logging extensions: GET reads, POST changes the server (as the
    // repository API does: a token with the publish scope, or the explicit opt-in).
    Route {
        post_access: Some(A::REPOSITORY_WRITE),
        ..route(
            &["/v2/trace/setting", "/v2/models/{name}/trace/setting"],
            A::PREDICT,
            M::Other,
            &[
                (Get, |c| {
                    Box::pin(runtime_settings::trace(c.app, c.req, c.name))
                }),
                (Post, |c| {
                    Box::pin(runtime_settings::trace(c.app, c.req, c.name))
                }),
            ],
        )
    },
    Route {
        post_access: Some(A::REPOSITORY_WRITE),
        ..route(
            &["/v2/logging"],
            A::PREDICT,
            M::Other,
            &[
                (Get, |c| Box::pin(runtime_settings::logging(c.app, c.req))),
                (Post, |c| Box::pin(runtime_settings::logging(c.app, c.req))),
            ],
        )
    },
];

/// 404 for a path no route serves.
pub(super) fn no_route_for(method: &Method, path: &str) -> ServeError {
    ServeError::new(Kind::NotFound, format!("no route for {method} {path}"))
}

async fn no_route(c: Ctx<'_>) -> Result<Reply, ServeError> {
    Err(no_route_for(c.req.method(), c.path))
}

/// Every pattern, to the index of its row.
static ROUTER: LazyLock<matchit::Router<usize>> = LazyLock::new(|| {
    let mut router = matchit::Router::new();
    for (i, route) in ROUTES.iter().enumerate() {
        for path in route.paths {
            if let Err(e) = router.insert(*path, i) {
                panic!("route table: {path}: {e}");
            }
        }
    }
    router
});

/// A path's route, with its `{name}` and `{version}`.
pub(super) struct Found<'p> {
    pub route: &'static Route,
    pub name: &'p str,
    pub version: &'p str,
}

/// The route for `path` (its ingress prefix stripped).
pub(super) fn find(path: &str) -> Option<Found<'_>> {
    let matched = ROUTER.at(path).ok()?;
    // matchit matches an empty segment; `/v2/models//ready` names no model.
    if matched.params.iter().any(|(_, v)| v.is_empty()) {
        return None;
    }
    Some(Found {
        route: &ROUTES[*matched.value],
        name: matched.params.get("name").unwrap_or_default(),
        version: matched.params.get("version").unwrap_or_default(),
    })
}

/// What a request needs: its route's access (a POST's where the route says), or the
/// predict scope for a path no route serves.
pub(super) fn access(found: Option<&Found<'_>>, method: &Method) -> Access {
    found.map_or(Access::PREDICT, |f| match f.route.post_access {
        Some(post) if method == Method::POST => post,
        _ => f.route.access,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(path: &str) -> Access {
        super::access(find(path).as_ref(), &Method::GET)
    }

    /// Every route with its methods, access and metrics route: a route cannot be added,
    /// nor its access changed, without this list changing.
    #[test]
    fn every_route_with_its_access() {
        let mut listed = Vec::new();
        for r in ROUTES {
            let verbs: Vec<String> = r
                .methods
                .iter()
                .map(|(v, _)| format!("{v:?}").to_uppercase())
                .collect();
            let access = match r.post_access {
                Some(post) => format!("{} post:{}", r.access.name(), post.name()),
                None => r.access.name().to_owned(),
            };
            for path in r.paths {
                listed.push(format!(
                    "{} {path} {access} {}{}{}",
                    verbs.join(","),
                    r.metric.label(),
                    if r.default_model {
                        " default-model"
                    } else {
                        ""
                    },
                    r.dialect.map(|d| format!(" {d}-only")).unwrap_or_default()
                        + match r.port {
                            Port::Management => " management",
                            Port::KServe => " kserve",
                            Port::MainAndManagement => " main+management",
                            Port::Main => "",
                        }
                ));
            }
        }
        let expected = [
            "GET,POST /models open other torchserve-only management",
            "OPTIONS / open metadata torchserve-only main+management",
            "ANY /api-description open metadata torchserve-only main+management",
            "GET,OPTIONS,DELETE,PUT /models/{name} open other torchserve-only management",
            "GET,OPTIONS,DELETE,PUT /models/{name}/{version} open other torchserve-only management",
            "PUT /models/{name}/{version}/set-default open other torchserve-only management",
            "GET /token open other torchserve-only management",
            "GET /v1/models predict metadata torchserve-only kserve",
            "GET,POST /v1/models/{name} open post:predict infer torchserve-only kserve",
            "GET /ping open health torchserve-only",
            "POST,PUT,OPTIONS /predictions/{name} predict infer torchserve-only",
            "POST,PUT,OPTIONS /predictions/{name}/{version} predict infer torchserve-only",
            "POST /explanations/{name} predict infer torchserve-only",
            "POST /explanations/{name}/{version} predict infer torchserve-only",
            "POST,GET /api/v1.0/predictions predict predict default-model",
            "POST,GET /api/v0.1/predictions predict predict default-model",
            "POST,GET /predict predict predict default-model",
            "POST /api/v1.0/feedback predict feedback default-model",
            "POST /api/v0.1/feedback predict feedback default-model",
            "POST,GET /send-feedback predict feedback default-model",
            "POST,GET /transform-input predict transform-input default-model",
            "POST,GET /transform-output predict transform-output default-model",
            "POST,GET /route predict route default-model",
            "POST,GET /aggregate predict aggregate default-model",
            "GET /health/ping open health default-model",
            "GET /api/v1.0/health/ping open health default-model",
            "GET /health/status open health default-model",
            "GET /api/v1.0/health/status open health default-model",
            "GET /live open health default-model",
            "GET /ready open health default-model",
            "GET /metadata predict metadata default-model",
            "GET /api/v1.0/metadata predict metadata default-model",
            "GET /api/v1.0/metadata{*rest} predict metadata default-model",
            "GET /seldon.json predict metadata",
            "GET /metrics open other",
            "GET /prometheus open other",
            "POST /api/{name}/{version} predict predict",
            "ANY /api/v1.0/{*rest} predict other",
            "ANY /api/v0.1/{*rest} predict other",
            "POST /login open other",
            "GET /api/v1.0/publish repository-write other",
            "GET /api/v1.0/publish/ repository-write other",
            "POST,DELETE /api/v1.0/publish/{name}/{version} repository-write other",
            "POST,DELETE /api/v1.0/publish/{name}/{version}/ repository-write other",
            "ANY /api/v1.0/publish/{name} repository-write other",
            "ANY /api/v1.0/publish/{name}/ repository-write other",
            "ANY /api/v1.0/publish/{name}/{version}/{*rest} repository-write other",
            "GET /v2 open metadata",
            "GET /v2/ open metadata",
            "GET /v2/health/live open health",
            "GET /v2/health/ready open health",
            "GET /v2/docs/dataplane.json predict metadata",
            "GET /v2/models/{name}/docs/dataplane.json predict metadata",
            "GET /v2/models/{name}/versions/{version}/docs/dataplane.json predict metadata",
            "GET /v2/docs predict metadata",
            "GET /v2/models/{name}/docs predict metadata",
            "GET /v2/models/{name}/versions/{version}/docs predict metadata",
            "GET /v2/models/{name} predict metadata",
            "GET /v2/models/{name}/ predict metadata",
            "GET /v2/models/{name}/versions/{version} predict metadata",
            "GET /v2/models/{name}/versions/{version}/ predict metadata",
            "GET /v2/models/{name}/ready open health",
            "GET /v2/models/{name}/versions/{version}/ready open health",
            "POST /v2/models/{name}/infer predict infer",
            "POST /v2/models/{name}/versions/{version}/infer predict infer",
            "POST /v2/models/{name}/infer_stream predict infer-stream",
            "POST /v2/models/{name}/versions/{version}/infer_stream predict infer-stream",
            "POST /v2/models/{name}/generate_stream predict infer-stream",
            "POST /v2/models/{name}/versions/{version}/generate_stream predict infer-stream",
            "POST /v2/models/{name}/generate predict generate",
            "POST /v2/models/{name}/versions/{version}/generate predict generate",
            "GET /v2/models/stats predict metadata",
            "GET /v2/models/{name}/stats predict metadata",
            "GET /v2/models/{name}/versions/{version}/stats predict metadata",
            "GET /v2/models/{name}/config predict metadata",
            "GET /v2/models/{name}/versions/{version}/config predict metadata",
            "POST /v2/repository/index repository-read other",
            "POST /v2/repository/models/{name}/load repository-write other",
            "POST /v2/repository/models/{name}/unload repository-write other",
            "GET /v2/systemsharedmemory/status predict other",
            "GET /v2/systemsharedmemory/region/{name}/status predict other",
            "POST /v2/systemsharedmemory/region/{name}/register publish other",
            "POST /v2/systemsharedmemory/unregister publish other",
            "POST /v2/systemsharedmemory/region/{name}/unregister publish other",
            "GET /v2/cudasharedmemory/status predict other",
            "GET /v2/cudasharedmemory/region/{name}/status predict other",
            "POST /v2/cudasharedmemory/region/{name}/register publish other",
            "POST /v2/cudasharedmemory/unregister publish other",
            "POST /v2/cudasharedmemory/region/{name}/unregister publish other",
            "GET,POST /v2/trace/setting predict post:repository-write other",
            "GET,POST /v2/models/{name}/trace/setting predict post:repository-write other",
            "GET,POST /v2/logging predict post:repository-write other",
        ];
        assert_eq!(listed, expected);
    }

    /// What a path resolves to: the route's first pattern, name and version.
    fn resolved(path: &str) -> Option<(&'static str, &str, &str)> {
        find(path).map(|f| (f.route.paths[0], f.name, f.version))
    }

    #[test]
    fn paths_resolve_as_the_hand_written_router_did() {
        assert_eq!(resolved("/v2"), Some(("/v2", "", "")));
        assert_eq!(resolved("/v2/"), Some(("/v2", "", "")));
        assert_eq!(
            resolved("/v2/models/m"),
            Some(("/v2/models/{name}", "m", ""))
        );
        assert_eq!(
            resolved("/v2/models/m/versions/3/infer"),
            Some(("/v2/models/{name}/infer", "m", "3"))
        );
        assert_eq!(
            resolved("/v2/models/m/ready"),
            Some(("/v2/models/{name}/ready", "m", ""))
        );
        assert_eq!(
            resolved("/v2/models/m/versions/3/"),
            Some(("/v2/models/{name}", "m", "3"))
        );
        assert!(resolved("/v2/models//infer").is_none());
        assert!(resolved("/v2/models/m/other").is_none());
        assert!(resolved("/v2/models/m/versions").is_none());
        assert!(resolved("/v2/repository/models//load").is_none());
        assert!(resolved("/v2nothing").is_none());
        assert_eq!(
            resolved("/v2/repository/models/m/unload"),
            Some(("/v2/repository/models/{name}/unload", "m", ""))
        );
        assert_eq!(
            resolved("/api/m/1"),
            Some(("/api/{name}/{version}", "m", "1"))
        );
        for p in [
            "/api/m/1/",
            "/api//1",
            "/api/m/",
            "/api/m/1/x",
            "/nope",
            "/ready/",
        ] {
            assert!(resolved(p).is_none(), "{p}");
        }
        for p in [
            "/api/v1.0/metadata",
            "/api/v1.0/metadata/",
            "/api/v1.0/metadata/x/y",
            "/metadata",
        ] {
            assert_eq!(resolved(p).unwrap().0, "/metadata", "{p}");
        }
        for p in ["/api/v1.0/x", "/api/v0.1/x/y", "/api/v1.0/publishX"] {
            assert_eq!(resolved(p).unwrap().0, "/api/v1.0/{*rest}", "{p}");
        }
        assert_eq!(
            resolved("/api/v1.0/publish/m/1/"),
            Some(("/api/v1.0/publish/{name}/{version}", "m", "1"))
        );
        assert_eq!(
            resolved("/api/v1.0/publish/m").unwrap().0,
            "/api/v1.0/publish/{name}"
        );
        assert_eq!(
            resolved("/api/v1.0/publish/m/1/2").unwrap().0,
            "/api/v1.0/publish/{name}"
        );
    }

    // Access, decided from the same match that picks the handler (the tests that
    // rest/access.rs held).

    #[test]
    fn open_routes_are_the_health_ones() {
        for p in [
            "/health/ping",
            "/api/v1.0/health/status",
            "/live",
            "/ready",
            "/metrics",
            "/login",
            "/v2",
            "/v2/health/ready",
            "/v2/models/m/ready",
            "/v2/models/m/versions/1/ready",
        ] {
            assert_eq!(access(p), Access::OPEN, "{p}");
        }
    }

    #[test]
    fn crafted_ready_suffixes_need_a_token() {
        for p in [
            "/v2/models/m/infer/ready",
            "/v2/models/ready",
            "/v2/models/m/versions/ready",
            "/v2/models/m/versions/ready/infer",
            "/v2/models//ready",
            "/v2/models/m/versions//ready",
            "/v2/models//versions/1/ready",
            "/v2/repository/models/m/ready",
            "/api/m/ready",
            "/api/v1.0/predictions/ready",
            "/ready/x",
            "/live/",
            "/v2/health/ready/x",
            "/metrics/x",
        ] {
            assert!(access(p).scope.is_some(), "{p}");
        }
        assert_eq!(access("/v2/models/m/infer"), Access::PREDICT);
        assert_eq!(access("/api/v1.0/predictions"), Access::PREDICT);
        assert_eq!(access("/nope"), Access::PREDICT);
    }

    #[test]
    fn repository_routes() {
        for p in [
            "/api/v1.0/publish",
            "/api/v1.0/publish/m/1",
            "/api/v1.0/publish/m",
            "/v2/repository/models/m/load",
            "/v2/repository/models/m/unload",
        ] {
            assert_eq!(access(p), Access::REPOSITORY_WRITE, "{p}");
        }
        assert_eq!(access("/v2/repository/index"), Access::REPOSITORY_READ);
    }

    #[test]
    fn settings_are_read_with_predict_and_changed_as_the_repository_is() {
        for p in [
            "/v2/trace/setting",
            "/v2/models/m/trace/setting",
            "/v2/logging",
        ] {
            let found = find(p);
            assert_eq!(super::access(found.as_ref(), &Method::GET), Access::PREDICT);
            assert_eq!(
                super::access(found.as_ref(), &Method::POST),
                Access::REPOSITORY_WRITE
            );
        }
    }

    #[test]
    fn wrong_methods() {
        let post = find("/api/v1.0/predictions").unwrap().route;
        assert!(post.handler(&Method::PUT).is_none());
        assert!(post.handler(&Method::GET).is_some());
        assert_eq!(
            post.not_allowed(&Method::PUT, "/predict").message,
            "PUT is not allowed on /predict"
        );
        let login = find("/login").unwrap().route;
        assert_eq!(
            login.not_allowed(&Method::GET, "/login").message,
            "POST {\"username\", \"password\"} to /login"
        );
        let list = find("/api/v1.0/publish").unwrap().route;
        assert_eq!(
            list.not_allowed(&Method::POST, "/api/v1.0/publish").message,
            "POST is not allowed on /api/v1.0/publish: GET lists, POST .../NAME/VERSION publishes"
        );
    }
}
