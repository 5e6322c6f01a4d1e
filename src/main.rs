//! The `vsphere-descheduler` binary: parse arguments, set up logging, run the command, map
//! the outcome to an exit code. Everything else lives in the library.

use std::process::ExitCode;

use vsphere_descheduler::cli::Args;
use vsphere_descheduler::text::one_line;
use vsphere_descheduler::{command, logging};

fn main() -> ExitCode {
    let args = Args::parse_command_line();
    logging::init(args.log_format, args.verbose);
    match command::execute(args) {
        Ok(code) => code,
        Err(error) => {
            // The chain is printed once, here: messages name the object, sources the cause.
            let mut message = format!("error: {}", lines(&error.to_string()));
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(&format!("\n  caused by: {}", lines(&cause.to_string())));
                source = cause.source();
            }
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{message}");
            }
            ExitCode::from(error.exit_code())
        }
    }
}

/// A message's lines (a list of problems is one per line), each bounded and with anything that
/// could still break it escaped: messages quote text from input files and servers.
fn lines(message: &str) -> String {
    let lines: Vec<_> = message.lines().map(one_line).collect();
    lines.join("\n")
}
