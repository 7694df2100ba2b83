//! The typed entry points: each model operation answers with its own type, and a model
//! that implements only `predict` gets the trait's defaults for the others.
mod common;

use std::sync::Arc;

use common::{infer_request, rows, runner, values, Stub};
use inferwire_codec::protocol::seldon::{Feedback, Payload};
use inferwire_server::error::Kind;
use serde_json::json;

#[tokio::test]
async fn each_operation_reaches_its_own_method() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, common::config());
    let p = runner.predict(rows(&[&[1.5, 2.0]]), None).await.unwrap();
    assert_eq!(values(&p), vec![3.0, 4.0]);
    let inferred = runner.infer(infer_request(&[&[1.0]]), None).await.unwrap();
    assert_eq!(inferred.outputs.len(), 1);
    assert!(inferred.parameters.is_empty());
    assert_eq!(stub.predicts(), 1);
    assert_eq!(stub.infers(), vec![1]);
}

#[tokio::test]
async fn operations_a_model_lacks_get_the_defaults() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, common::config());
    assert_eq!(runner.metadata(None).await.unwrap(), json!({}));
    let health = runner.health_status(None).await.unwrap();
    assert_eq!(health.payload, Payload::Json(json!({"status": "ok"})));
    let e = runner
        .send_feedback(Feedback::default(), None)
        .await
        .expect_err("the stub takes no feedback");
    assert_eq!(e.kind, Kind::BadRequest);
    assert_eq!(e.message, "this model does not implement send_feedback");
    assert_eq!(stub.entered(), 0, "the defaults never call into the stub");
}

#[tokio::test]
async fn a_model_error_keeps_its_kind_and_message() {
    // A model with only `predict`: its own error as it raised it, and the default
    // answer for V2 inference.
    struct OnlyPredict;
    impl inferwire_server::Model for OnlyPredict {
        fn seldon(&self) -> Option<&dyn inferwire_server::SeldonOps> {
            Some(self)
        }
    }
    impl inferwire_server::SeldonOps for OnlyPredict {
        fn predict(
            &self,
            _msg: inferwire_codec::protocol::seldon::SeldonMessage,
        ) -> Result<inferwire_server::Prediction, inferwire_server::ModelError> {
            Err(inferwire_server::ModelError {
                kind: inferwire_server::ModelErrorKind::Raised,
                message: "ValueError: no".into(),
                body: None,
            })
        }
    }
    let runner = inferwire_server::runner::Runner::new(
        Arc::new(OnlyPredict),
        &common::config(),
        common::metrics(),
    )
    .unwrap();
    let e = runner.predict(rows(&[&[1.0]]), None).await.unwrap_err();
    assert_eq!((e.kind, e.http_status()), (Kind::Model, 500));
    assert_eq!(e.message, "ValueError: no");
    let e = runner
        .infer(infer_request(&[&[1.0]]), None)
        .await
        .unwrap_err();
    assert_eq!((e.kind, e.http_status()), (Kind::BadRequest, 400));
    assert_eq!(e.message, "this model does not implement V2 inference");
}

#[tokio::test]
async fn graph_component_operations_default_as_seldon() {
    use inferwire_server::runner::Component;
    use inferwire_server::Prediction;

    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, common::config());
    // Without transform_input / transform_output, Seldon answers the input unchanged.
    for call in [Component::TransformInput, Component::TransformOutput] {
        let msg = rows(&[&[1.5, 2.0]]);
        let payload = msg.payload.clone();
        match runner.component(call(msg), None).await.unwrap() {
            Prediction::Message(m) => assert_eq!(m.payload, payload),
            other => panic!("{other:?}"),
        }
    }
    // route and aggregate have no default: a 400 saying so, in Seldon's words.
    let e = runner
        .component(Component::Route(rows(&[&[1.0]])), None)
        .await
        .expect_err("the stub has no route");
    assert_eq!(e.kind, Kind::BadRequest);
    assert!(e.message.starts_with("Route not defined"), "{}", e.message);
    let e = runner
        .component(Component::Aggregate(vec![rows(&[&[1.0]])]), None)
        .await
        .expect_err("the stub has no aggregate");
    assert!(
        e.message.starts_with("Aggregate not defined"),
        "{}",
        e.message
    );
    assert_eq!(stub.entered(), 0, "the defaults never call into the stub");
}
