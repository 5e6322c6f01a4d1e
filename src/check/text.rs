//! The check report as text: per section a heading naming the backend and what was checked, a
//! table of status, check and detail, each fix on the line below its item, then one summary
//! line. Text from servers is escaped and cut as every message is ([`one_line`]).

use super::{CheckReport, Section, Status};
use crate::text::one_line;

/// The widest a check's column grows; longer names push their detail to the right.
const MAX_CHECK_WIDTH: usize = 56;

pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    for section in &report.sections {
        render_section(&mut out, section);
        out.push('\n');
    }
    let summary = &report.summary;
    // Said only when there is some: the line reads as before for everything else.
    let going_live = match summary.missing_for_going_live {
        0 => String::new(),
        count => format!("{count} missing for going live (dryRun=false), "),
    };
    out.push_str(&format!(
        "{} missing, {going_live}{} warning(s), {} ok, {} not checked: exit code {}\n",
        summary.missing, summary.warnings, summary.ok, summary.not_checked, report.exit_code
    ));
    out
}

fn render_section(out: &mut String, section: &Section) {
    out.push_str(&format!(
        "{}: {}\n",
        section.backend.word(),
        one_line(&section.target)
    ));
    let names: Vec<String> = section
        .items
        .iter()
        .map(|item| item.subject.describe())
        .collect();
    let width = names
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp("CHECK".len(), MAX_CHECK_WIDTH);
    let status_width = section
        .items
        .iter()
        .map(|item| item.finding.status.word().len())
        .max()
        .unwrap_or(0)
        .max(Status::NotChecked.word().len());
    out.push_str(&format!(
        "  {:status_width$}  {:width$}  DETAIL\n",
        "STATUS", "CHECK"
    ));
    for (item, name) in section.items.iter().zip(&names) {
        out.push_str(&format!(
            "  {:status_width$}  {name:width$}  {}\n",
            item.finding.status.word(),
            one_line(&item.finding.detail.to_string())
        ));
        if let Some(fix) = &item.finding.fix {
            let fix = fix.to_string();
            out.push_str(&format!(
                "  {:status_width$}  fix: {}\n",
                "",
                one_line(&fix)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Backend, Item, PushgatewayFix, Subject};
    use super::*;
    use crate::cause::{Cause, Failure};

    #[test]
    fn each_fix_is_under_its_item_and_the_summary_gives_the_exit_code() {
        let report = CheckReport::new(vec![Section {
            backend: Backend::Pushgateway,
            target: "http://pushgateway:9091".into(),
            items: vec![
                Item::new(
                    Subject::PushgatewayReady {
                        url: "http://pushgateway:9091".into(),
                    },
                    Status::Missing,
                    Failure::new(Cause::Connection, "connection refused\u{1b}[2J"),
                )
                .with_fix(PushgatewayFix::CaFile),
            ],
        }]);
        assert_eq!(
            report.text(),
            "pushgateway: http://pushgateway:9091\n\
             \x20 STATUS       CHECK              DETAIL\n\
             \x20 missing      Pushgateway ready  connection refused\\u{1b}[2J\n\
             \x20              fix: --metrics-push-ca-file must be a PEM file of the CA that \
             signed the Pushgateway's certificate\n\
             \n\
             1 missing, 0 warning(s), 0 ok, 0 not checked: exit code 1\n"
        );
    }
}
