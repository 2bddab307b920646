//! What evaluations keep (evaluations.yaml): datasets (`dset_…`), their items
//! (`dsit_…`), and the results of a run (`evres_…`), one per run and item. Evals
//! (`eval_…`) and their runs (`evrun_…`) are `agent::record`'s, since a release's
//! promotion gate reads them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::scope::in_project;
use crate::store::owned::owned_record;

/// A named set of test cases, unique by name in its project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    pub description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One test case: messages replayed verbatim as a generation's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetItemRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub dataset_id: String,
    pub input: Vec<Value>,
    pub expected_output: Option<String>,
    pub metadata: Option<Value>,
    pub source_generation_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// What one scorer said of one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreOut {
    pub scorer: String,
    pub score: f64,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
}

/// One item of one run, scored (or errored). Its id is derived from the run and the
/// item, so an item is recorded once per run whatever restarts happen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResultRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub eval_run_id: String,
    pub dataset_item_id: Option<String>,
    pub input: Vec<Value>,
    pub expected_output: Option<String>,
    pub generation_id: Option<String>,
    pub output: Option<String>,
    pub scores: Vec<ScoreOut>,
    pub passed: bool,
    pub error: Option<String>,
    pub created_at: String,
}

owned_record!(DatasetRecord, "soat_datasets", "soat_datasets_by_account");
owned_record!(DatasetItemRecord, "soat_dataset_items", "soat_dataset_items_by_account");
owned_record!(EvalResultRecord, "soat_eval_results", "soat_eval_results_by_account");
in_project!(DatasetRecord, DatasetItemRecord, EvalResultRecord);

/// The API's view of a record: itself without its account.
pub fn view<T: Serialize>(r: &T) -> Value {
    let mut v = serde_json::to_value(r).expect("records serialize");
    if let Value::Object(m) = &mut v {
        m.remove("account_id");
        if m.contains_key("dataset_item_id") {
            m.remove("project_id");
        }
    }
    v
}
