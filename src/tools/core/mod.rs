//! Core tool handlers (§5.1), grouped as the spec groups them.

use std::sync::Arc;

use super::spec::CoreTool;

pub mod alerts;
pub mod contributions;
pub mod follow_ups;
pub mod handoff;
pub mod knowledge;
pub mod pages;
pub mod preferences;
pub mod slack;

/// Every core tool that has a handler.
pub fn all() -> Vec<Arc<dyn CoreTool>> {
    vec![
        Arc::new(knowledge::SearchKnowledgeBase),
        Arc::new(knowledge::SearchSlackMessages),
        Arc::new(knowledge::WhoKnows),
        Arc::new(knowledge::SearchCurrentEvents),
        Arc::new(pages::GetKnowledgePageLink),
        Arc::new(pages::SaveKnowledgeEntry),
        Arc::new(contributions::ListMySlackContributions),
        Arc::new(contributions::AddMySlackContribution),
        Arc::new(contributions::RefreshMySlackContribution),
        Arc::new(contributions::RemoveMySlackContribution),
        Arc::new(contributions::ListMyExtractedKnowledge),
        Arc::new(contributions::UpdateMyExtractedKnowledgeEntry),
        Arc::new(contributions::DeleteMyExtractedKnowledgeEntry),
        Arc::new(handoff::EscalateToAdmin),
        Arc::new(handoff::RequestHumanIntervention),
        Arc::new(handoff::ListMyHumanInterventions),
        Arc::new(handoff::CancelHumanIntervention),
        Arc::new(handoff::ReportRootMistake),
        Arc::new(preferences::RememberUserPreference),
        Arc::new(preferences::ListUserPreferences),
        Arc::new(preferences::ForgetUserPreference),
        Arc::new(preferences::SetDmReplyStyle),
        Arc::new(preferences::SetAutoReplyPreference),
        Arc::new(follow_ups::CreateFollowUp),
        Arc::new(follow_ups::ListFollowUps),
        Arc::new(follow_ups::UpdateFollowUp),
        Arc::new(follow_ups::PauseFollowUp),
        Arc::new(follow_ups::ResumeFollowUp),
        Arc::new(follow_ups::CancelFollowUp),
        Arc::new(alerts::CreateActionAlert),
        Arc::new(alerts::ListActionAlerts),
        Arc::new(alerts::CancelActionAlert),
        Arc::new(slack::FindChannelForCommunityPost),
        Arc::new(slack::StartCommunityConversation),
        Arc::new(slack::SendSlackDmAdmin),
        Arc::new(slack::SendSlackChannelMessageAdmin),
    ]
}
