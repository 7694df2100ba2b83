//! TorchServe's gRPC management API (`org.pytorch.serve.grpc.management.
//! ManagementAPIsService`, `inferwire torchserve` only), on its own port
//! (`grpc_management_port`) as TorchServe serves it: each call is what REST's management
//! API does (`torchserve_management`), answered as TorchServe's `ManagementImpl` answers:
//! `msg` is the status sentence, or the pretty-printed JSON of a description or a list;
//! a failure is the code TorchServe gives it, with the Java exception's name after a
//! newline. With token authorization on, every call needs the management key.
use std::sync::Arc;

use serde_json::{Map, Value};
use tonic::{Code, Request, Response, Status};

use super::generated_torchserve::management::management_ap_is_service_server::ManagementApIsService;
use super::generated_torchserve::management::{
    DescribeModelRequest, ListModelsRequest, ManagementResponse, RegisterModelRequest,
    ScaleWorkerRequest, SetDefaultRequest, UnregisterModelRequest,
};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::torchserve_keys::FAILED;
use crate::torchserve_management::{self as management, MODEL_API_OFF};

#[derive(Clone)]
pub struct TorchServeManagement(pub Arc<App>);

/// Refused as TorchServe's interceptor refuses a call without the management key.
fn admit<T>(app: &App, req: &Request<T>) -> Result<(), Status> {
    let header = req
        .metadata()
        .get(http::header::AUTHORIZATION.as_str())
        .and_then(|v| v.to_str().ok());
    if management::management_key(app, header) {
        Ok(())
    } else {
        Err(Status::permission_denied(FAILED))
    }
}

fn answer(msg: String) -> Result<Response<ManagementResponse>, Status> {
    Ok(Response::new(ManagementResponse { msg }))
}

#[tonic::async_trait]
impl ManagementApIsService for TorchServeManagement {
    async fn describe_model(
        &self,
        req: Request<DescribeModelRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        if r.customized && r.model_version != "all" {
            // TorchServe then runs the handler's `describe_handle`.
            return Err(Status::unimplemented(
                "customized: a handler's own description (describe_handle) is not served \
                 yet; call DescribeModel without it for the model's description",
            ));
        }
        let out = management::describe(&self.0, &r.model_name, &r.model_version)
            .await
            .map_err(|e| status(&e))?;
        answer(management::pretty(&out))
    }

    async fn list_models(
        &self,
        req: Request<ListModelsRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        let out = management::list(
            &self.0,
            Some(i64::from(r.limit)),
            Some(i64::from(r.next_page_token)),
        )
        .await
        .map_err(|e| status(&e))?;
        answer(management::pretty(&out))
    }

    async fn register_model(
        &self,
        req: Request<RegisterModelRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        let parameters = register_parameters(&r);
        let name = (!r.model_name.is_empty()).then_some(r.model_name.as_str());
        let msg = management::register(&self.0, &r.url, name, parameters)
            .await
            .map_err(|e| status(&e))?;
        answer(msg)
    }

    async fn scale_worker(
        &self,
        req: Request<ScaleWorkerRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        // TorchServe's: a number that is not positive is not given.
        let given = |n: i32| u32::try_from(n).ok().filter(|&n| n > 0);
        let msg = management::scale(
            &self.0,
            &r.model_name,
            &r.model_version,
            given(r.min_worker),
            given(r.max_worker),
        )
        .await
        .map_err(|e| status(&e))?;
        answer(msg)
    }

    async fn set_default(
        &self,
        req: Request<SetDefaultRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        let msg = management::set_default(&self.0, &r.model_name, &r.model_version)
            .await
            .map_err(|e| status(&e))?;
        answer(msg)
    }

    async fn unregister_model(
        &self,
        req: Request<UnregisterModelRequest>,
    ) -> Result<Response<ManagementResponse>, Status> {
        admit(&self.0, &req)?;
        let r = req.into_inner();
        let msg = management::unregister(&self.0, &r.model_name, &r.model_version)
            .await
            .map_err(|e| status(&e))?;
        answer(msg)
    }
}

/// A RegisterModelRequest's fields besides `url` and `model_name`, as REST's query
/// gives them (strings), those set only: the repository takes each (most warned about as
/// not served) or refuses it by name.
fn register_parameters(r: &RegisterModelRequest) -> Map<String, Value> {
    let mut out = Map::new();
    let mut put = |key: &str, value: String| {
        out.insert(key.to_owned(), Value::String(value));
    };
    for (key, n) in [
        ("batch_size", r.batch_size),
        ("initial_workers", r.initial_workers),
        ("max_batch_delay", r.max_batch_delay),
        ("response_timeout", r.response_timeout),
        ("queue_timeout", r.queue_timeout),
    ] {
        if n != 0 {
            put(key, n.to_string());
        }
    }
    for (key, text) in [("handler", &r.handler), ("runtime", &r.runtime)] {
        if !text.is_empty() {
            put(key, text.clone());
        }
    }
    for (key, on) in [("synchronous", r.synchronous), ("s3_sse_kms", r.s3_sse_kms)] {
        if on {
            put(key, "true".into());
        }
    }
    out
}

/// TorchServe's answer to a failed management call: its code, and the message with the
/// Java exception's name after a newline (grpc-java's `augmentDescription`).
fn status(e: &ServeError) -> Status {
    const MODEL: &str = "org.pytorch.serve.archive.model.ModelException";
    const NOT_FOUND: &str = "org.pytorch.serve.archive.model.ModelNotFoundException";
    const BAD_REQUEST: &str = "org.pytorch.serve.http.BadRequestException";
    let (code, reason) = match e.kind {
        Kind::MethodNotAllowed if e.message == MODEL_API_OFF => (Code::PermissionDenied, MODEL),
        Kind::NotFound if e.message.starts_with("Model version") => (
            Code::NotFound,
            "org.pytorch.serve.archive.model.ModelVersionNotFoundException",
        ),
        Kind::NotFound => (Code::NotFound, NOT_FOUND),
        // A register's 409: TorchServe's code for it (`GRPCUtils.getGRPCStatusCode`).
        _ if management::is_conflict(e) => (
            Code::Aborted,
            "org.pytorch.serve.http.ConflictStatusException",
        ),
        // The archive is not where allowed_urls or the model store let it be read from.
        Kind::BadRequest
            if e.message.contains("does not match any allowed URL")
                || e.message.contains("Model not found in model store") =>
        {
            (Code::NotFound, NOT_FOUND)
        }
        Kind::BadRequest
            if e.message.starts_with("Parameter ") || e.message.contains("max_worker") =>
        {
            (Code::InvalidArgument, BAD_REQUEST)
        }
        Kind::BadRequest => (Code::InvalidArgument, MODEL),
        Kind::Deadline | Kind::Overloaded | Kind::ShuttingDown | Kind::Unavailable => {
            return e.to_status()
        }
        Kind::Unsupported => (
            Code::Unimplemented,
            "org.pytorch.serve.http.InternalServerException",
        ),
        _ => (
            Code::Internal,
            "org.pytorch.serve.http.InternalServerException",
        ),
    };
    Status::new(code, format!("{}\n{reason}", e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_answered_with_torchserve_s_codes() {
        let missing = status(&ServeError::new(Kind::NotFound, "Model not found: m"));
        assert_eq!(missing.code(), Code::NotFound);
        assert_eq!(
            missing.message(),
            "Model not found: m\norg.pytorch.serve.archive.model.ModelNotFoundException"
        );
        let off = status(&ServeError::new(Kind::MethodNotAllowed, MODEL_API_OFF));
        assert_eq!(off.code(), Code::PermissionDenied);
        let url = status(&ServeError::new(
            Kind::BadRequest,
            "Parameter url is required.",
        ));
        assert_eq!(url.code(), Code::InvalidArgument);
        assert!(url.message().ends_with("BadRequestException"));
        let allowed = status(&ServeError::new(
            Kind::BadRequest,
            "Given URL http://x/y.mar does not match any allowed URL(s)",
        ));
        assert_eq!(allowed.code(), Code::NotFound);
    }

    #[test]
    fn only_the_fields_set_are_handed_over() {
        let r = RegisterModelRequest {
            url: "m.mar".into(),
            initial_workers: 1,
            synchronous: true,
            ..Default::default()
        };
        let p = register_parameters(&r);
        assert_eq!(p.len(), 2);
        assert_eq!(p["initial_workers"], "1");
        assert_eq!(p["synchronous"], "true");
    }
}
