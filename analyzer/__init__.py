"""chainlens.analyzer: PyFlink source -> StreamGraph -> JobGraph -> findings.

The adapters (the command line, the language server, the fleet scan) import
what they use from here and nothing deeper; an import-linter contract holds
them to it.  Names are loaded on first use, so a command that needs only the
configuration does not load the analysis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: name -> (module under chainlens.analyzer, name in it)
_EXPORTS: dict[str, tuple[str, str]] = {
    # the engine
    "FileCheck": ("check", "FileCheck"),
    "Mode": ("check", "Mode"),
    "PARALLEL_THRESHOLD": ("model.limits", "PARALLEL_THRESHOLD"),
    "check_bytes": ("check", "check_bytes"),
    "check_file": ("check", "check_file"),
    "check_paths": ("check", "check_paths"),
    "check_selectors": ("check", "check_selectors"),
    "check_text": ("check", "check_text"),
    "default_jobs": ("check", "default_jobs"),
    "display_path": ("check", "display_path"),
    "diff_of": ("check", "diff_of"),
    "discover": ("discovery", "discover"),
    "Fault": ("discovery", "Fault"),
    # reading and writing files
    "AtomicFile": ("files", "AtomicFile"),
    "UnreadableError": ("files", "UnreadableError"),
    "WriteError": ("files", "WriteError"),
    "atomic_writer": ("files", "atomic_writer"),
    "kind_of": ("files", "kind_of"),
    "reason": ("files", "reason"),
    "read_bounded": ("files", "read_bounded"),
    "read_head": ("files", "read_head"),
    "write_atomic": ("files", "write_atomic"),
    # room on Python's frame stack for a run of files
    "with_stack_room": ("room", "with_stack_room"),
    "Comparison": ("gate.compare", "Comparison"),
    "compare_with_base": ("gate.compare", "compare_with_base"),
    "compare_upgrade": ("gate.compare", "compare_upgrade"),
    "compare_versions": ("gate.compare", "compare_versions"),
    "SAVEPOINT_RULES": ("gate.compare", "SAVEPOINT_RULES"),
    "StateFact": ("gate.compare", "StateFact"),
    "VersionComparison": ("gate.compare", "VersionComparison"),
    "analyze_graphs": ("api", "analyze_graphs"),
    "is_pyflink_source": ("discovery", "is_pyflink_source"),
    "explain_id": ("gate.compare", "explain_id"),
    "SavepointComparison": ("gate.compare", "SavepointComparison"),
    "compare_with_savepoint": ("gate.compare", "compare_with_savepoint"),
    "MetadataError": ("savepoint.metadata", "MetadataError"),
    "read_metadata": ("savepoint.metadata", "read_metadata"),
    "EditorBaseline": ("gate.compare", "EditorBaseline"),
    "check_document": ("gate.compare", "check_document"),
    "HistoryError": ("history", "HistoryError"),
    "verified_diagnostics": ("gate.compare", "verified_diagnostics"),
    "ModuleCache": ("extract.parse", "ModuleCache"),
    "ask_planner": ("planner.driver", "ask"),
    "PendingPlan": ("model.planner", "PendingPlan"),
    "read_module": ("extract.modules", "read_from_disk"),
    # deployments
    "Deployment": ("model.deployment", "Deployment"),
    "DeploymentError": ("deploy.apply", "DeploymentError"),
    "DeploymentNotFoundError": ("deploy.discover", "DeploymentNotFoundError"),
    "DeploymentResolver": ("deploy.apply", "DeploymentResolver"),
    "apply_deployment": ("deploy.apply", "apply_deployment"),
    "choose_deployments": ("deploy.targets", "choose"),
    "deployment_at": ("deploy.targets", "deployment_at"),
    "deployed_programs": ("deploy.targets", "deployed_programs"),
    "deployments_at_commit": ("deploy.targets", "deployments_at_commit"),
    "deployment_base_settings": ("deploy.targets", "base_settings"),
    "describe_deployment": ("deploy.targets", "describe"),
    "discover_deployments": ("deploy.discover", "discover_deployments"),
    "project_deployments": ("deploy.targets", "project_deployments"),
    "restore_verdict": ("deploy.targets", "restore_verdict"),
    "deployment_run_document": ("deploy.targets", "run_document"),
    "render_deployment_runs_json": ("deploy.targets", "render_runs_json"),
    "Document": ("model.document", "Document"),
    # savepoints where teams keep them (object stores), the running cluster
    "StoreError": ("deploy.object_store", "StoreError"),
    "StoreLimits": ("deploy.object_store", "StoreLimits"),
    "load_savepoint": ("deploy.savepoints", "load_savepoint"),
    "FlinkRest": ("deploy.flink_rest", "FlinkRest"),
    "RestError": ("deploy.flink_rest", "RestError"),
    "RestLimits": ("deploy.flink_rest", "RestLimits"),
    "ClusterDiff": ("deploy.cluster", "ClusterDiff"),
    "diff_running_job": ("deploy.cluster", "diff_running_job"),
    "cluster_diff_text": ("deploy.cluster", "diff_text"),
    "render_cluster_diff": ("deploy.cluster", "render_diff"),
    "SavepointMetadata": ("model.savepoint", "SavepointMetadata"),
    "deployment_savepoint": ("deploy.savepoints", "deployment_savepoint"),
    "deployment_findings": ("deploy.findings", "deployment_findings"),
    "deployment_values": ("deploy.editor", "deployment_values"),
    "descriptor_diagnostics": ("deploy.editor", "descriptor_diagnostics"),
    "is_descriptor_name": ("deploy.editor", "is_descriptor_name"),
    # configuration
    "DEFAULT_EXCLUDE": ("config", "DEFAULT_EXCLUDE"),
    "MAX_FILE_BYTES": ("config", "MAX_FILE_BYTES"),
    "MAX_PARALLELISM": ("model.limits", "MAX_PARALLELISM"),
    "Config": ("config", "Config"),
    "ConfigError": ("config", "ConfigError"),
    "ConfigLayer": ("config", "ConfigLayer"),
    "ConfigCache": ("config", "ConfigCache"),
    "ConfigResolver": ("config", "ConfigResolver"),
    "command_line_layer": ("config", "command_line_layer"),
    "materialize": ("config", "materialize"),
    # the model
    "AnalysisResult": ("model.result", "AnalysisResult"),
    "BLOCKING": ("model.result", "BLOCKING"),
    "CompiledJob": ("model.result", "CompiledJob"),
    "Problem": ("model.result", "Problem"),
    "Diagnostic": ("model.diagnostic", "Diagnostic"),
    "Finding": ("model.diagnostic", "Finding"),
    "diagnostics_at": ("model.diagnostic", "diagnostics_at"),
    "shown_max_parallelism": ("model.job_graph", "shown_max_parallelism"),
    "RuleCode": ("model.diagnostic", "RuleCode"),
    "RuleInfo": ("model.diagnostic", "RuleInfo"),
    "Severity": ("model.severity", "Severity"),
    "TextEdit": ("model.diagnostic", "TextEdit"),
    "SourcePosition": ("model.source", "SourcePosition"),
    "SourceRange": ("model.source", "SourceRange"),
    # facts and edits for the editor
    "EdgeFact": ("operator_facts", "EdgeFact"),
    "FileFacts": ("operator_facts", "FileFacts"),
    "JobFact": ("operator_facts", "JobFact"),
    "OperatorFact": ("operator_facts", "OperatorFact"),
    "shuffle_count": ("operator_facts", "shuffle_count"),
    "state_info": ("rules.operators", "state_info"),
    "apply_fixes": ("fix", "apply_fixes"),
    "suppression_fix": ("suppression", "suppression_fix"),
    # rules and their documentation
    "rule_infos": ("rules.docs", "rule_infos"),
    "render_rules_markdown": ("rules.docs", "render_rules_markdown"),
    # renderers
    "render_graph_text": ("render.graphs", "render_text"),
    "render_dot": ("render.graphs", "render_dot"),
    "results_to_json": ("render.graphs", "results_to_json"),
    "summary_text": ("render.graphs", "summary_text"),
    "render_svg": ("render.picture", "render_svg"),
    "command_line_variants": ("variants", "variants"),
    "render_variants_text": ("render.variants", "render_variants_text"),
    "render_variants_json": ("render.variants", "render_variants_json"),
    "variants_of_file": ("variants", "variants_of_file"),
    "VariantChange": ("variants", "VariantChange"),
    "VariantFacts": ("variants", "VariantFacts"),
    "variant_facts": ("variants", "variant_facts"),
    "shown_command_line": ("variants", "shown_command_line"),
    "CheckSummary": ("render.findings", "CheckSummary"),
    "Section": ("render.findings", "Section"),
    "check_summary": ("render.findings", "check_summary"),
    "render_report": ("render.findings", "render_report"),
    "TEXT_FORMATS": ("model.limits", "TEXT_FORMATS"),
    "base_section": ("render.gate", "base_section"),
    "savepoint_section": ("render.gate", "savepoint_section"),
    "upgrade_section": ("render.gate", "upgrade_section"),
    "render_graph_json": ("render.graphs", "render_graph_json"),
    "render_rule": ("rules.docs", "render_rule"),
    "render_rule_table": ("rules.docs", "render_rule_table"),
    "one_line": ("errors", "one_line"),
    "count_versions": ("render.findings", "count_versions"),
    # Flink versions
    "FlinkVersion": ("model.flink_versions", "FlinkVersion"),
    "VersionError": ("model.flink_versions", "VersionError"),
    "parse_flink_range": ("model.flink_versions", "parse_range"),
    "parse_flink_version": ("model.flink_versions", "parse_version"),
    "upgrade_of": ("upgrade", "upgrade_of"),
    "upgrade_of_file": ("upgrade", "upgrade_of_file"),
    "state_compatibility_note": ("upgrade", "state_compatibility_note"),
    "upgrade_from": ("upgrade", "upgrade_from"),
    "FileUpgrade": ("upgrade", "FileUpgrade"),
    "render_upgrade_text": ("render.upgrade", "render_upgrade_text"),
    "render_upgrade_json": ("render.upgrade", "render_upgrade_json"),
    "render_findings_text": ("render.findings", "render_text"),
    "render_github": ("render.findings", "render_github"),
    "render_json": ("render.findings", "render_json"),
    "render_sarif": ("render.findings", "render_sarif"),
    "render_statistics": ("render.findings", "render_statistics"),
    "finding_sort_key": ("render.findings", "sort_key"),
}

__all__ = [
    "BLOCKING",
    "DEFAULT_EXCLUDE",
    "MAX_FILE_BYTES",
    "MAX_PARALLELISM",
    "PARALLEL_THRESHOLD",
    "SAVEPOINT_RULES",
    "TEXT_FORMATS",
    "AnalysisResult",
    "AtomicFile",
    "CheckSummary",
    "ClusterDiff",
    "Comparison",
    "CompiledJob",
    "Config",
    "ConfigCache",
    "ConfigError",
    "ConfigLayer",
    "ConfigResolver",
    "Deployment",
    "DeploymentError",
    "DeploymentNotFoundError",
    "DeploymentResolver",
    "Diagnostic",
    "Document",
    "EdgeFact",
    "EditorBaseline",
    "Fault",
    "FileCheck",
    "FileFacts",
    "FileUpgrade",
    "Finding",
    "FlinkRest",
    "FlinkVersion",
    "HistoryError",
    "JobFact",
    "MetadataError",
    "Mode",
    "ModuleCache",
    "OperatorFact",
    "PendingPlan",
    "Problem",
    "RestError",
    "RestLimits",
    "RuleCode",
    "RuleInfo",
    "SavepointComparison",
    "SavepointMetadata",
    "Section",
    "Severity",
    "SourcePosition",
    "SourceRange",
    "StateFact",
    "StoreError",
    "StoreLimits",
    "TextEdit",
    "UnreadableError",
    "VariantChange",
    "VariantFacts",
    "VersionComparison",
    "VersionError",
    "WriteError",
    "analyze_graphs",
    "apply_deployment",
    "apply_fixes",
    "ask_planner",
    "atomic_writer",
    "base_section",
    "check_bytes",
    "check_document",
    "check_file",
    "check_paths",
    "check_selectors",
    "check_summary",
    "check_text",
    "choose_deployments",
    "cluster_diff_text",
    "command_line_layer",
    "command_line_variants",
    "compare_upgrade",
    "compare_versions",
    "compare_with_base",
    "compare_with_savepoint",
    "count_versions",
    "default_jobs",
    "deployed_programs",
    "deployment_at",
    "deployment_base_settings",
    "deployment_findings",
    "deployment_run_document",
    "deployment_savepoint",
    "deployment_values",
    "deployments_at_commit",
    "describe_deployment",
    "descriptor_diagnostics",
    "diagnostics_at",
    "diff_of",
    "diff_running_job",
    "discover",
    "discover_deployments",
    "display_path",
    "explain_id",
    "finding_sort_key",
    "is_descriptor_name",
    "is_pyflink_source",
    "kind_of",
    "load_savepoint",
    "materialize",
    "one_line",
    "parse_flink_range",
    "parse_flink_version",
    "project_deployments",
    "read_bounded",
    "read_head",
    "read_metadata",
    "read_module",
    "reason",
    "render_cluster_diff",
    "render_deployment_runs_json",
    "render_dot",
    "render_findings_text",
    "render_github",
    "render_graph_json",
    "render_graph_text",
    "render_json",
    "render_report",
    "render_rule",
    "render_rule_table",
    "render_rules_markdown",
    "render_sarif",
    "render_statistics",
    "render_svg",
    "render_upgrade_json",
    "render_upgrade_text",
    "render_variants_json",
    "render_variants_text",
    "restore_verdict",
    "results_to_json",
    "rule_infos",
    "savepoint_section",
    "shown_command_line",
    "shown_max_parallelism",
    "shuffle_count",
    "state_compatibility_note",
    "state_info",
    "summary_text",
    "suppression_fix",
    "upgrade_from",
    "upgrade_of",
    "upgrade_of_file",
    "upgrade_section",
    "variant_facts",
    "variants_of_file",
    "verified_diagnostics",
    "with_stack_room",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from chainlens.analyzer.api import analyze_graphs
    from chainlens.analyzer.check import (
        PARALLEL_THRESHOLD,
        FileCheck,
        Mode,
        check_bytes,
        check_file,
        check_paths,
        check_selectors,
        check_text,
        default_jobs,
        diff_of,
        display_path,
    )
    from chainlens.analyzer.config import (
        DEFAULT_EXCLUDE,
        MAX_FILE_BYTES,
        MAX_PARALLELISM,
        Config,
        ConfigCache,
        ConfigError,
        ConfigLayer,
        ConfigResolver,
        command_line_layer,
        materialize,
    )
    from chainlens.analyzer.deploy.apply import (
        DeploymentError,
        DeploymentResolver,
        apply_deployment,
    )
    from chainlens.analyzer.deploy.cluster import ClusterDiff, diff_running_job
    from chainlens.analyzer.deploy.cluster import diff_text as cluster_diff_text
    from chainlens.analyzer.deploy.cluster import render_diff as render_cluster_diff
    from chainlens.analyzer.deploy.discover import (
        DeploymentNotFoundError,
        discover_deployments,
    )
    from chainlens.analyzer.deploy.editor import (
        deployment_values,
        descriptor_diagnostics,
        is_descriptor_name,
    )
    from chainlens.analyzer.deploy.findings import deployment_findings
    from chainlens.analyzer.deploy.flink_rest import FlinkRest, RestError, RestLimits
    from chainlens.analyzer.deploy.object_store import StoreError, StoreLimits
    from chainlens.analyzer.deploy.savepoints import (
        deployment_savepoint,
        load_savepoint,
    )
    from chainlens.analyzer.deploy.targets import (
        base_settings as deployment_base_settings,
    )
    from chainlens.analyzer.deploy.targets import choose as choose_deployments
    from chainlens.analyzer.deploy.targets import (
        deployed_programs,
        deployment_at,
        deployments_at_commit,
        project_deployments,
        restore_verdict,
    )
    from chainlens.analyzer.deploy.targets import describe as describe_deployment
    from chainlens.analyzer.deploy.targets import (
        render_runs_json as render_deployment_runs_json,
    )
    from chainlens.analyzer.deploy.targets import (
        run_document as deployment_run_document,
    )
    from chainlens.analyzer.discovery import Fault, discover, is_pyflink_source
    from chainlens.analyzer.errors import one_line
    from chainlens.analyzer.extract.modules import read_from_disk as read_module
    from chainlens.analyzer.extract.parse import ModuleCache
    from chainlens.analyzer.files import (
        AtomicFile,
        UnreadableError,
        WriteError,
        atomic_writer,
        kind_of,
        read_bounded,
        read_head,
        reason,
        write_atomic,
    )
    from chainlens.analyzer.fix import apply_fixes
    from chainlens.analyzer.gate.compare import (
        SAVEPOINT_RULES,
        Comparison,
        EditorBaseline,
        SavepointComparison,
        StateFact,
        VersionComparison,
        check_document,
        compare_upgrade,
        compare_versions,
        compare_with_base,
        compare_with_savepoint,
        explain_id,
        verified_diagnostics,
    )
    from chainlens.analyzer.history import HistoryError
    from chainlens.analyzer.model.deployment import Deployment
    from chainlens.analyzer.model.diagnostic import (
        TEXT_FORMATS,
        Diagnostic,
        Finding,
        RuleCode,
        RuleInfo,
        Severity,
        TextEdit,
        diagnostics_at,
    )
    from chainlens.analyzer.model.document import Document
    from chainlens.analyzer.model.flink_versions import FlinkVersion, VersionError
    from chainlens.analyzer.model.flink_versions import parse_range as parse_flink_range
    from chainlens.analyzer.model.flink_versions import (
        parse_version as parse_flink_version,
    )
    from chainlens.analyzer.model.job_graph import shown_max_parallelism
    from chainlens.analyzer.model.planner import PendingPlan
    from chainlens.analyzer.model.result import (
        BLOCKING,
        AnalysisResult,
        CompiledJob,
        Problem,
    )
    from chainlens.analyzer.model.savepoint import SavepointMetadata
    from chainlens.analyzer.model.source import SourcePosition, SourceRange
    from chainlens.analyzer.operator_facts import (
        EdgeFact,
        FileFacts,
        JobFact,
        OperatorFact,
        shuffle_count,
    )
    from chainlens.analyzer.planner.driver import ask as ask_planner
    from chainlens.analyzer.render.findings import (
        CheckSummary,
        Section,
        check_summary,
        count_versions,
        render_github,
        render_json,
        render_report,
        render_sarif,
        render_statistics,
    )
    from chainlens.analyzer.render.findings import render_text as render_findings_text
    from chainlens.analyzer.render.findings import sort_key as finding_sort_key
    from chainlens.analyzer.render.gate import (
        base_section,
        savepoint_section,
        upgrade_section,
    )
    from chainlens.analyzer.render.graphs import (
        render_dot,
        render_graph_json,
        results_to_json,
        summary_text,
    )
    from chainlens.analyzer.render.graphs import render_text as render_graph_text
    from chainlens.analyzer.render.picture import render_svg
    from chainlens.analyzer.render.upgrade import (
        render_upgrade_json,
        render_upgrade_text,
    )
    from chainlens.analyzer.render.variants import (
        render_variants_json,
        render_variants_text,
    )
    from chainlens.analyzer.room import with_stack_room
    from chainlens.analyzer.rules.docs import (
        render_rule,
        render_rule_table,
        render_rules_markdown,
        rule_infos,
    )
    from chainlens.analyzer.rules.operators import state_info
    from chainlens.analyzer.savepoint.metadata import MetadataError, read_metadata
    from chainlens.analyzer.suppression import suppression_fix
    from chainlens.analyzer.upgrade import (
        FileUpgrade,
        state_compatibility_note,
        upgrade_from,
        upgrade_of,
        upgrade_of_file,
    )
    from chainlens.analyzer.variants import (
        VariantChange,
        VariantFacts,
        shown_command_line,
        variant_facts,
        variants_of_file,
    )
    from chainlens.analyzer.variants import variants as command_line_variants
