//! `validate`: check policy files, reporting every problem of every file.

use std::process::ExitCode;

use serde::Serialize;

use super::Error;
use crate::cli::ValidateArgs;
use crate::policy::{self, PolicyError};
use crate::report::OutputFormat;
use crate::text::one_line;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    file: String,
    valid: bool,
    problems: Vec<String>,
    warnings: Vec<String>,
}

pub fn execute(args: &ValidateArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let mut results = Vec::new();
    for file in &args.files {
        let result = match policy::load_file(file) {
            Ok(loaded) => FileResult {
                file: file.display().to_string(),
                valid: true,
                problems: Vec::new(),
                warnings: loaded
                    .warnings
                    .iter()
                    .map(|warning| one_line(warning).into_owned())
                    .collect(),
            },
            Err(PolicyError::Invalid { problems, .. }) => FileResult {
                file: file.display().to_string(),
                valid: false,
                problems: problems.iter().map(ToString::to_string).collect(),
                warnings: Vec::new(),
            },
            Err(error) => FileResult {
                file: file.display().to_string(),
                valid: false,
                problems: vec![one_line(&crate::run::error_chain(&error)).into_owned()],
                warnings: Vec::new(),
            },
        };
        results.push(result);
    }
    let all_valid = results.iter().all(|r| r.valid);
    let text = match output {
        OutputFormat::Json => {
            serde_json::to_string_pretty(&results).expect("results serialize") + "\n"
        }
        // `execute` refuses html for this command before it starts.
        OutputFormat::Text | OutputFormat::Html => {
            let mut text = String::new();
            for result in &results {
                if result.valid {
                    text.push_str(&format!("{}: valid\n", result.file));
                } else {
                    text.push_str(&format!(
                        "{}: {} problem(s)\n",
                        result.file,
                        result.problems.len()
                    ));
                }
                for problem in &result.problems {
                    text.push_str(&format!("  {problem}\n"));
                }
                for warning in &result.warnings {
                    text.push_str(&format!("  warning: {warning}\n"));
                }
            }
            text
        }
    };
    use std::io::Write;
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(Error::Output)?;
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
