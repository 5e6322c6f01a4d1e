//! `validate`: check policy files, and the policy of chart values files (`--values`),
//! reporting every problem of every file.

use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::Error;
use crate::cli::ValidateArgs;
use crate::policy::{self, PolicyError, PolicyProblem, Severity};
use crate::report::OutputFormat;
use crate::report::findings::{self, Finding};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    file: String,
    valid: bool,
    /// Each problem in one line, `FILE:LINE:COL: PATH: MESSAGE` (as the text output shows it).
    problems: Vec<String>,
    warnings: Vec<String>,
    /// The problems, then the warnings, as objects: rule, severity, file, line, column, path,
    /// message.
    findings: Vec<Finding>,
}

impl FileResult {
    /// A policy file's result.
    fn of(file: &Path) -> FileResult {
        FileResult::loaded(file, policy::load_file(file))
    }

    /// A chart values file's result: its policy as the chart renders it.
    fn of_values(file: &Path) -> FileResult {
        FileResult::loaded(file, policy::load_values_file(file))
    }

    fn loaded(file: &Path, loaded: Result<policy::LoadedPolicy, PolicyError>) -> FileResult {
        let name = file.display().to_string();
        match loaded {
            Ok(loaded) => FileResult {
                file: name,
                valid: true,
                problems: Vec::new(),
                warnings: lines(&loaded.warnings),
                findings: findings(&loaded.warnings, Severity::Warning),
            },
            Err(PolicyError::Invalid { problems, .. }) => FileResult {
                file: name,
                valid: false,
                problems: lines(&problems),
                warnings: Vec::new(),
                findings: findings(&problems, Severity::Error),
            },
            // The file failed as a whole: its one finding's message is its one problem line.
            Err(error) => {
                let finding = Finding::failed(Some(name.clone()), &error);
                FileResult {
                    problems: vec![finding.message.clone()],
                    findings: vec![finding],
                    file: name,
                    valid: false,
                    warnings: Vec::new(),
                }
            }
        }
    }
}

fn lines(problems: &[PolicyProblem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

fn findings(problems: &[PolicyProblem], severity: Severity) -> Vec<Finding> {
    problems.iter().map(|p| Finding::of(p, severity)).collect()
}

pub fn execute(args: &ValidateArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let results: Vec<FileResult> = (args.files.iter().map(|f| FileResult::of(f)))
        .chain(args.values.iter().map(|f| FileResult::of_values(f)))
        .collect();
    let all_valid = results.iter().all(|r| r.valid);
    let all_findings = || -> Vec<Finding> {
        results
            .iter()
            .flat_map(|r| r.findings.iter().cloned())
            .collect()
    };
    let text = match output {
        OutputFormat::Json => {
            serde_json::to_string_pretty(&results).expect("results serialize") + "\n"
        }
        OutputFormat::Sarif | OutputFormat::Github => findings::render(&all_findings(), output),
        // `execute` refuses html and markdown for this command before it starts.
        OutputFormat::Text | OutputFormat::Html | OutputFormat::Markdown => text(&results),
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

fn text(results: &[FileResult]) -> String {
    let mut text = String::new();
    for result in results {
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
