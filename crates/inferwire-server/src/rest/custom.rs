//! Routes a model serves itself (MLServer's `@custom_handler` methods): a path no route
//! of the table serves, that a loaded model declared, is its call. The body (decoded
//! from its Content-Encoding, within `max_body_bytes`) goes to the model as it came;
//! the model's JSON is the reply.
use std::sync::Arc;

use http::{Request, StatusCode};
use hyper::body::Incoming;

use super::body::{self, Reply};
use crate::app::App;
use crate::error::ServeError;
use crate::models::Served;
use crate::observe::Observed;

pub async fn handle(
    app: &App,
    model: &Arc<Served>,
    req: Request<Incoming>,
    path: &str,
    obs: &Observed,
) -> Result<Reply, ServeError> {
    let method = req.method().as_str().to_owned();
    let path = path.to_owned();
    let data = body::read(app, req, app.config.max_body_bytes).await?;
    let deadline = app.deadline(obs.start, None);
    let out = model.runner.custom(method, path, data, deadline).await?;
    Ok(body::json(StatusCode::OK, out.to_vec()))
}
